import EarshotSystem
import Testing

struct PathTests {
    @Test func joinPutsOneSlashBetween() {
        #expect(Path.join("/var/lib/earshot", "catalogs") == "/var/lib/earshot/catalogs")
        #expect(Path.join("state/", "library.db") == "state/library.db")
        #expect(Path.join("/", "x") == "/x")
        #expect(Path.join("", "x") == "x")
    }

    @Test func folderOfAPath() {
        #expect(Path.folder(of: "/var/lib/earshot/library.db") == "/var/lib/earshot")
        #expect(Path.folder(of: "state/library.db") == "state")
        #expect(Path.folder(of: "/library.db") == "/")
        #expect(Path.folder(of: "library.db") == ".")
        #expect(Path.folder(of: "") == ".")
        #expect(Path.folder(of: "/var/lib/earshot/") == "/var/lib")
        #expect(Path.folder(of: "/") == "/")
    }
}
