import EarshotTestSupport
import Foundation
import Testing

/// Rules of the code base that the compiler cannot check.
struct SourceRulesTests {
    /// Every lock is `EarshotSync.Locked`, never a bare `Synchronization.Mutex`: ThreadSanitizer
    /// cannot see a contended Mutex hand-over on Linux, so one bare Mutex brings back false race
    /// reports (see Sources/EarshotSync/Locked.swift and scripts/sanitizers/thread.supp).
    @Test func locksAreLockedNotBareMutexes() throws {
        let root = Repository.root
        let bareMutex = try NSRegularExpression(pattern: #"(?<![A-Za-z_])Mutex\s*[<(]"#)
        var offenders: [String] = []
        for folder in ["Sources", "Tests", "benchmarks/Sources", "fuzz/Sources"] {
            let base = root.appendingPathComponent(folder)
            guard let files = FileManager.default.enumerator(at: base, includingPropertiesForKeys: nil) else { continue }
            for case let file as URL in files where file.pathExtension == "swift" {
                let path = file.path.replacingOccurrences(of: root.path + "/", with: "")
                guard path != "Sources/EarshotSync/Locked.swift" else { continue }
                let text = try String(contentsOf: file, encoding: .utf8)
                for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                    let code = line.split(separator: "//", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
                    if bareMutex.firstMatch(in: code, range: NSRange(code.startIndex..., in: code)) != nil {
                        offenders.append("\(path):\(number + 1)")
                    }
                }
            }
        }
        #expect(offenders.isEmpty, "use Locked instead of Mutex at \(offenders.joined(separator: ", "))")
    }

    /// Every Markdown file in the repository stands alone: each relative link, and each path in
    /// backquotes that leaves the repository (`../…`), names a file or folder inside it. Users
    /// have the repository, nothing beside it.
    @Test func markdownLinksResolveInsideTheRepository() throws {
        let root = Repository.root.standardizedFileURL
        let link = try NSRegularExpression(pattern: #"\]\(([^)\s]+)\)"#)
        let outside = try NSRegularExpression(pattern: #"`(\.\./[^`\s]+)`"#)
        var checked = 0
        var broken: [String] = []
        for folder in ["", "benchmarks", "clients/c", "clients/python", "docs", "fuzz", "deploy", "scripts"] {
            let base = folder.isEmpty ? root : root.appendingPathComponent(folder)
            let names = (try? FileManager.default.contentsOfDirectory(atPath: base.path)) ?? []
            for name in names where name.hasSuffix(".md") {
                let file = base.appendingPathComponent(name)
                let text = try String(contentsOf: file, encoding: .utf8)
                let range = NSRange(text.startIndex..., in: text)
                let targets = (link.matches(in: text, range: range) + outside.matches(in: text, range: range)).compactMap {
                    Range($0.range(at: 1), in: text).map { String(text[$0]) }
                }
                for target in targets where !target.contains("://") && !target.hasPrefix("#") && !target.hasPrefix("mailto:") {
                    let path = String(target.split(separator: "#", maxSplits: 1).first ?? "")
                    guard !path.isEmpty else { continue }
                    let resolved = base.appendingPathComponent(path).standardizedFileURL
                    checked += 1
                    let inside = resolved.path == root.path || resolved.path.hasPrefix(root.path + "/")
                    if !inside || !FileManager.default.fileExists(atPath: resolved.path) {
                        broken.append("\(folder.isEmpty ? "" : folder + "/")\(name): \(target)")
                    }
                }
            }
        }
        #expect(checked > 20, "only \(checked) links were found")
        #expect(broken.isEmpty, "links that do not resolve inside the repository: \(broken.joined(separator: "; "))")
    }

    /// The target graph is what docs/ARCHITECTURE.md says: its table lists, per target, the
    /// package targets and products it uses (exactly Package.swift's dependencies) and the
    /// system modules it may also import; every `import` in the target's sources is one of them.
    @Test func importsFollowTheArchitecture() throws {
        let root = Repository.root
        let rules = try ArchitectureRules.table(in: String(contentsOf: root.appendingPathComponent("docs/ARCHITECTURE.md"), encoding: .utf8))
        let declared = try PackageTargets.dependencies(in: String(contentsOf: root.appendingPathComponent("Package.swift"), encoding: .utf8))
        #expect(rules.count >= 10, "the table was not found in docs/ARCHITECTURE.md")

        // Package.swift and the table agree, target by target.
        let listed = Set(rules.keys), built = Set(declared.keys)
        #expect(built.subtracting(listed).isEmpty, "targets missing from docs/ARCHITECTURE.md: \(built.subtracting(listed).sorted())")
        #expect(listed.subtracting(built).isEmpty, "targets in docs/ARCHITECTURE.md that Package.swift does not declare: \(listed.subtracting(built).sorted())")
        for (target, uses) in declared {
            guard let rule = rules[target] else { continue }
            #expect(rule.uses == uses, "\(target): Package.swift uses \(uses.sorted()), docs/ARCHITECTURE.md says \(rule.uses.sorted())")
        }

        // Every import of every file is allowed for its target.
        var offenders: [String] = []
        for (target, rule) in rules {
            let allowed = rule.uses.union(rule.alsoImports)
                .union(rule.alsoImports.contains("Foundation") ? ["FoundationEssentials"] : [])
            for (path, line, module) in try ArchitectureRules.imports(under: root.appendingPathComponent("Sources/\(target)"), root: root)
            where !allowed.contains(module) {
                offenders.append("\(path):\(line) imports \(module)")
            }
        }
        #expect(offenders.isEmpty, "imports outside docs/ARCHITECTURE.md's table: \(offenders.joined(separator: "; "))")
    }

    /// FFmpeg serves authoring only: nothing the daemon is built from depends on it, so the
    /// board's daemon package neither links nor installs FFmpeg's libraries.
    @Test func theDaemonNeverReachesFFmpeg() throws {
        let declared = try PackageTargets.dependencies(in: String(contentsOf: Repository.root.appendingPathComponent("Package.swift"), encoding: .utf8))
        var reached: Set<String> = [], pending = ["earshotd"]
        while let target = pending.popLast() {
            for next in declared[target] ?? [] where reached.insert(next).inserted { pending.append(next) }
        }
        #expect(reached.contains("EarshotService"), "the walk did not follow Package.swift's dependencies")
        #expect(reached.isDisjoint(with: ["CFFmpeg", "FFmpeg", "EarshotMedia"]), "earshotd reaches \(reached.intersection(["CFFmpeg", "FFmpeg", "EarshotMedia"]).sorted())")
        #expect(declared["earshot"]?.contains("EarshotMedia") == true)
    }

    /// The recognition core does no I/O: no file, process or thread API appears in its code.
    @Test func theCoreTouchesNoFiles() throws {
        let root = Repository.root
        let forbidden = ["FileManager", "FileHandle", "contentsOfFile", "Data(contentsOf", "String(contentsOf", "fileURLWithPath", "fopen(", " open(",
                         "mmap(", "Thread(", "DispatchQueue", "ProcessInfo", "getenv("]
        var offenders: [String] = []
        let base = root.appendingPathComponent("Sources/EarshotCore")
        for file in try ArchitectureRules.swiftFiles(under: base) {
            let text = try String(contentsOf: file, encoding: .utf8)
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let code = line.split(separator: "//", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
                for word in forbidden where code.contains(word) {
                    offenders.append("\(file.lastPathComponent):\(number + 1) uses \(word)")
                }
            }
        }
        #expect(offenders.isEmpty, "EarshotCore must not do I/O: \(offenders.joined(separator: "; "))")
    }
}

/// Reads docs/ARCHITECTURE.md's import table and the imports of a target's sources.
enum ArchitectureRules {
    struct Rule {
        var uses: Set<String>
        var alsoImports: Set<String>
    }

    /// Rows `| target | uses | also imports |` of the table after the "import rules" comment.
    static func table(in markdown: String) throws -> [String: Rule] {
        guard let start = markdown.range(of: "<!-- import rules") else { return [:] }
        var rules: [String: Rule] = [:]
        var inTable = false
        for line in markdown[start.upperBound...].split(separator: "\n", omittingEmptySubsequences: false) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("|") {
                inTable = true
                let cells = trimmed.split(separator: "|", omittingEmptySubsequences: false).dropFirst().dropLast()
                    .map { $0.trimmingCharacters(in: .whitespaces) }
                guard cells.count == 3, cells[0] != "target", !cells[0].hasPrefix("---") else { continue }
                func names(_ cell: String) -> Set<String> {
                    Set(cell.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty && $0 != "—" })
                }
                rules[cells[0]] = Rule(uses: names(cells[1]), alsoImports: names(cells[2]))
            } else if inTable {
                break
            }
        }
        return rules
    }

    static func swiftFiles(under folder: URL) throws -> [URL] {
        guard let files = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil) else { return [] }
        return files.compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" }
    }

    /// (path, line, module) of every import under `folder`, conditional ones included, except
    /// Foundation where it is only the fallback of `#if canImport(FoundationEssentials)` (as
    /// swift-protobuf generates it): on Linux that branch is never compiled.
    static func imports(under folder: URL, root: URL) throws -> [(String, Int, String)] {
        var found: [(String, Int, String)] = []
        for file in try swiftFiles(under: folder) {
            let path = file.path.replacingOccurrences(of: root.path + "/", with: "")
            let text = try String(contentsOf: file, encoding: .utf8)
            var essentialsBranch = false, essentialsFallback = false
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                switch line.trimmingCharacters(in: .whitespaces) {
                case "#if canImport(FoundationEssentials)": essentialsBranch = true
                case "#else": essentialsFallback = essentialsBranch
                case "#endif": essentialsBranch = false; essentialsFallback = false
                default: break
                }
                var words = line.split(separator: " ").map(String.init)
                while let first = words.first, first.hasPrefix("@") || first == "public" || first == "internal" { words.removeFirst() }
                guard words.count >= 2, words[0] == "import" else { continue }
                var module = words[1]
                if ["struct", "class", "enum", "func", "var", "typealias", "protocol"].contains(module), words.count >= 3 {
                    module = words[2]
                }
                if essentialsFallback, module == "Foundation" { continue }
                found.append((path, number + 1, String(module.split(separator: ".").first ?? "")))
            }
        }
        return found
    }
}

/// Reads the non-test targets of Package.swift and the targets and products each depends on.
enum PackageTargets {
    static func dependencies(in manifest: String) throws -> [String: Set<String>] {
        var result: [String: Set<String>] = [:]
        let text = manifest
        for opener in [".target(", ".executableTarget("] {
            var search = text.startIndex
            while let found = text.range(of: opener, range: search..<text.endIndex) {
                // The call's text, up to its balanced closing parenthesis.
                var depth = 0
                var end = found.lowerBound
                var index = text.index(before: found.upperBound)
                while index < text.endIndex {
                    if text[index] == "(" { depth += 1 }
                    if text[index] == ")" { depth -= 1; if depth == 0 { end = index; break } }
                    index = text.index(after: index)
                }
                let call = String(text[found.upperBound..<end])
                search = end
                // Benchmark and fuzzing targets (declared with a path there) may use anything.
                guard let name = firstQuoted(after: "name:", in: call), !call.contains("path: \"benchmarks"),
                      !call.contains("path: \"fuzz") else { continue }
                var uses = Set<String>()
                if let deps = call.range(of: "dependencies: [") {
                    var level = 1
                    var i = deps.upperBound
                    while i < call.endIndex, level > 0 {
                        if call[i] == "[" { level += 1 }
                        if call[i] == "]" { level -= 1 }
                        i = call.index(after: i)
                    }
                    let list = String(call[deps.upperBound..<call.index(before: i)])
                    // Plain "Name" entries, and products: .product(name: "Name", package: …).
                    var rest = Substring(list)
                    while let q = rest.firstIndex(of: "\"") {
                        let after = rest.index(after: q)
                        guard let close = rest[after...].firstIndex(of: "\"") else { break }
                        let word = String(rest[after..<close])
                        let before = rest[..<q]
                        if !before.hasSuffix("package: ") { uses.insert(word) }
                        rest = rest[rest.index(after: close)...]
                    }
                }
                result[name] = uses
            }
        }
        return result
    }

    private static func firstQuoted(after label: String, in text: String) -> String? {
        guard let l = text.range(of: label), let open = text[l.upperBound...].firstIndex(of: "\"") else { return nil }
        let after = text.index(after: open)
        guard let close = text[after...].firstIndex(of: "\"") else { return nil }
        return String(text[after..<close])
    }
}
