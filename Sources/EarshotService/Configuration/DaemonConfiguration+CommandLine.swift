import EarshotSystem
import FoundationEssentials

/// What earshotd's command line says about its configuration, beyond the declared options: the
/// `--section.key=value` overrides and where the configuration file is.
extension DaemonConfiguration {
    /// The configuration file read when no `--config` is given (if it exists).
    public static let defaultPath = "/etc/earshot/earshotd.toml"

    /// One `--section.key=value` argument as a key and a value, or nil when `argument` is not of
    /// that form (it must start with `--`, have a `=`, and a `.` in the key). The value is read as
    /// TOML when it parses (`--session.follow=false`, `--rpc.listen=["tcp://…"]`), else as the raw
    /// text (`--audio.device=plughw:1,0`). Whether the key exists is `load`'s business.
    public static func override(fromArgument argument: String) -> (key: String, value: TOMLSubset.Value)? {
        guard argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") else { return nil }
        let key = argument[argument.index(argument.startIndex, offsetBy: 2)..<equals]
        guard key.contains(".") else { return nil }
        return (String(key), TOMLSubset.parseValue(String(argument[argument.index(after: equals)...])))
    }

    /// Reads the configuration as earshotd does: `path` when given (unreadable is an error),
    /// else `defaultPath` when it can be read, else the built-in defaults; then `overrides`.
    /// Returns it with where it came from (the path, or "built-in defaults").
    public static func load(path: String?, defaultPath: String = defaultPath,
                            overrides: [(key: String, value: TOMLSubset.Value)]) throws(Problem) -> (configuration: DaemonConfiguration, origin: String) {
        var text = ""
        var origin = "built-in defaults"
        if let path {
            guard let t = readText(path) else { throw Problem(message: "\(path): cannot read the configuration file") }
            (text, origin) = (t, path)
        } else if let t = readText(defaultPath) {
            (text, origin) = (t, defaultPath)
        }
        return (try load(text: text, origin: origin, overrides: overrides), origin)
    }

    /// A regular file's UTF-8 text; nil for anything else. A FIFO or a device named as the
    /// configuration is refused without being opened, so it cannot hang the start.
    private static func readText(_ path: String) -> String? {
        guard let bytes = try? AtomicFile.read(path) else { return nil }
        return String(validating: bytes, as: UTF8.self)
    }
}
