import EarshotAuthoring
import EarshotCore

/// The `--media-items` CSV option shared by `catalog create`, `add` and `update`.
enum MediaItemsFile {
    /// Parses the CSV at `path`; errors name the file and the line.
    static func read(_ path: String) throws(CLIFailure) -> [MediaItemCSV.Row] {
        let bytes = try InputFile.read(path)
        do { return try MediaItemCSV.parse(bytes: bytes) } catch { throw .badInput(path, error) }
    }

    /// Distributes the CSV rows (if any) over the inputs and existing references. Errors about a
    /// row name the CSV file; errors about inputs name the input.
    static func assign(
        _ rows: [MediaItemCSV.Row], from path: String?, inputs: [String], existingReferenceCount: Int? = nil
    ) throws(CLIFailure) -> MediaItemCSV.Assignment {
        do {
            return try MediaItemCSV.assign(rows, inputs: inputs, existingReferenceCount: existingReferenceCount)
        } catch {
            if let path, error.message.hasPrefix("line ") { throw .badInput(path, error) }
            throw .badInput("", error)
        }
    }
}
