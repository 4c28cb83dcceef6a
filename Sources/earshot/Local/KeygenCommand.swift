import ArgumentParser
import EarshotCrypto
import EarshotTransport
import Foundation

/// `earshot keygen`: a CURVE key pair for a client of a daemon with security on.
struct KeygenCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keygen",
        abstract: "Make a client key pair for `earshot remote` and other Earshot clients.",
        discussion: """
            Writes NAME.key (the secret key, mode 0600: keep it on the client) and NAME.pub, and \
            prints the line for the daemon's allow-list (<state_directory>/clients.allow): \
            "<public key> <name> <role>". NAME.pub holds the same line after a '#' comment, so \
            appending the file to the allow-list admits the client: \
            cat NAME.pub >> /var/lib/earshot/clients.allow

            Roles: viewer (events, state, health, the catalog list, its own library), operator \
            (+ prepare, match, cues), admin (+ managing catalogs, every library).

            --author makes a catalog author's Ed25519 key instead: NAME.author.key (secret, for \
            `earshot catalog sign`) and NAME.author.pub (the line for a box's trusted-authors file, \
            catalogs.trusted_authors).
            """)

    @Option(name: .shortAndLong, help: ArgumentHelp("Path and name of the files, without extension; the allow-list name is its last part.", valueName: "name"))
    var output = "earshot-client"

    @Option(help: ArgumentHelp("The role the allow-list line gives the client: viewer, operator or admin.", valueName: "role"))
    var role = ClientRole.operator.rawValue

    @Flag(help: "Replace existing key files.") var force = false
    @Flag(help: "Make a catalog author's signing key (Ed25519) instead of a client key.") var author = false

    func validate() throws {
        guard ClientRole(rawValue: role) != nil else {
            throw ValidationError("--role \(role): a role is viewer, operator or admin")
        }
    }

    func run() throws {
        if author { return try makeAuthorKey() }
        let secretPath = output + ".key", publicPath = output + ".pub"
        let name = (output as NSString).lastPathComponent.replacingOccurrences(of: ":", with: "-")
        if !force, FileManager.default.fileExists(atPath: secretPath) {
            throw CLIFailure("\(secretPath) exists; give --force to replace it (clients using it will be refused)", status: .usage)
        }
        do {
            let pair = try CurveKeyPair.generate()
            try CurveKeyFile.writeSecret(pair, to: secretPath, comment: "Earshot client secret key for \(name): keep private")
            let line = "\(pair.publicKey) \(name) \(role)"
            try CurveKeyFile.writeAllowListLine(line, to: publicPath,
                                               comment: "Earshot client \(name), role \(role): append this file to a daemon's clients.allow")
            print("public key: \(pair.publicKey)")
            print("wrote \(secretPath) (secret, mode 0600) and \(publicPath) (its allow-list line)")
            print("add this line to the daemon's allow-list, or append \(publicPath) to it:")
            print(line)
        } catch let problem as CurveKeyFile.Problem {
            throw CLIFailure(problem.message, status: .internalFailure)
        }
    }

    private func makeAuthorKey() throws {
        let secretPath = output + ".author.key", publicPath = output + ".author.pub"
        let name = (output as NSString).lastPathComponent
        if !force, FileManager.default.fileExists(atPath: secretPath) {
            throw CLIFailure("\(secretPath) exists; give --force to replace it (catalogs it signed stay signed by the old key)", status: .usage)
        }
        let key = Ed25519.SigningKey()
        do {
            try AuthorKeyFile.writeSigningKey(key, to: secretPath, comment: "Earshot catalog author key of \(name): keep private")
            try AuthorKeyFile.writePublicKey(key, name: name, to: publicPath, comment: "Earshot catalog author \(name): add the next line to a box's trusted authors file")
        } catch {
            throw CLIFailure(error.message, status: .internalFailure)
        }
        print("author public key: \(Z85.encode(key.publicKey))")
        print("wrote \(secretPath) (secret, mode 0600) and \(publicPath)")
        print("add this line to each box's trusted authors file (catalogs.trusted_authors):")
        print("\(Z85.encode(key.publicKey)) \(name)")
    }
}
