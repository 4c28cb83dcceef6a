import Foundation

/// The package's own folder, found from this file's place in it (Sources/EarshotTestSupport/),
/// for tests that read the repository: docs, deploy files, scripts, the built products.
public enum Repository {
    public static let root: URL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
}
