import ArgumentParser
import EarshotTransport
import Foundation

/// `earshot keygen`: a CURVE key pair for a client of a daemon with security on.
struct KeygenCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keygen",
        abstract: "Make a client key pair for `earshot remote` and other Earshot clients.",
        discussion: """
            Writes NAME.key (the secret key, mode 0600: keep it on the client) and NAME.pub (the \
            public key), and prints the line to add to the daemon's allow-list \
            (<state_directory>/clients.allow). Change the role at its end to viewer, operator or admin.
            """)

    @Option(name: .shortAndLong, help: ArgumentHelp("Path and name of the files, without extension; the allow-list name is its last part.", valueName: "name"))
    var output = "earshot-client"

    @Flag(help: "Replace existing key files.") var force = false

    func run() throws {
        let secretPath = output + ".key", publicPath = output + ".pub"
        let name = (output as NSString).lastPathComponent.replacingOccurrences(of: ":", with: "-")
        if !force, FileManager.default.fileExists(atPath: secretPath) {
            throw CLIFailure("\(secretPath) exists; give --force to replace it (clients using it will be refused)", status: .usage)
        }
        do {
            let pair = try CurveKeyPair.generate()
            try CurveKeyFile.writeSecret(pair, to: secretPath, comment: "Earshot client secret key for \(name): keep private")
            try CurveKeyFile.writePublic(pair.publicKey, to: publicPath, comment: "Earshot client public key for \(name)")
            print("public key: \(pair.publicKey)")
            print("wrote \(secretPath) (secret, mode 0600) and \(publicPath)")
            print("add this line to the daemon's allow-list (role: viewer, operator or admin):")
            print("\(pair.publicKey) \(name) operator")
        } catch let problem as CurveKeyFile.Problem {
            throw CLIFailure(problem.message, status: .internalFailure)
        }
    }
}
