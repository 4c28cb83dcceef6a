/// Joining and splitting path text, without touching the file system.
public enum Path {
    /// `name` inside `folder`: "state" and "catalogs" give "state/catalogs", "state/" does not
    /// double the slash, and an empty folder gives `name` itself.
    public static func join(_ folder: String, _ name: String) -> String {
        if folder.isEmpty { return name }
        return folder.hasSuffix("/") ? folder + name : folder + "/" + name
    }

    /// The folder that holds `path`: "/var/lib/earshot/library.db" gives "/var/lib/earshot",
    /// "/library.db" gives "/", and a bare name (or "") gives ".".
    public static func folder(of path: String) -> String {
        var text = Substring(path)
        while text.count > 1, text.hasSuffix("/") { text = text.dropLast() }
        guard let slash = text.lastIndex(of: "/") else { return "." }
        let folder = text[..<slash]
        return folder.isEmpty ? "/" : String(folder)
    }
}
