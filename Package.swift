// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "Earshot",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "EarshotCore", targets: ["EarshotCore"]),
        .library(name: "EarshotSystem", targets: ["EarshotSystem"]),
        .library(name: "EarshotStore", targets: ["EarshotStore"]),
        .library(name: "EarshotCrypto", targets: ["EarshotCrypto"]),
        .library(name: "EarshotAuthoring", targets: ["EarshotAuthoring"]),
        .library(name: "EarshotAudio", targets: ["EarshotAudio"]),
        .library(name: "EarshotLive", targets: ["EarshotLive"]),
        .library(name: "EarshotTestSupport", targets: ["EarshotTestSupport"]),
        .library(name: "EarshotTransport", targets: ["EarshotTransport"]),
        .library(name: "EarshotClient", targets: ["EarshotClient"]),
        .executable(name: "earshot", targets: ["earshot"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        // No traits: the default ones add Foundation stream APIs, which would link all of Foundation.
        .package(url: "https://github.com/apple/swift-protobuf", from: "1.39.0", traits: []),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-numerics", from: "1.1.1"),
        // The dashboard's web server: a small one (no SwiftNIO), which builds in seconds.
        .package(url: "https://github.com/swhitty/FlyingFox", from: "0.27.1"),
    ],
    targets: [
        // C libraries from Debian packages. Only their one Swift wrapper imports each.
        .systemLibrary(name: "CFFTW", pkgConfig: "fftw3f", providers: [.apt(["libfftw3-dev"])]),
        .systemLibrary(name: "CSndfile", pkgConfig: "sndfile", providers: [.apt(["libsndfile1-dev"])]),
        .systemLibrary(name: "COpus", pkgConfig: "opus", providers: [.apt(["libopus-dev"])]),
        .systemLibrary(name: "CSoxr", pkgConfig: "soxr", providers: [.apt(["libsoxr-dev"])]),
        .systemLibrary(name: "CALSA", pkgConfig: "alsa", providers: [.apt(["libasound2-dev"])]),
        .systemLibrary(name: "CZMQ", pkgConfig: "libzmq", providers: [.apt(["libzmq3-dev"])]),
        .systemLibrary(name: "CSodium", pkgConfig: "libsodium", providers: [.apt(["libsodium-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        // No pkgConfig: avahi-client.pc adds only -D_REENTRANT, which SwiftPM refuses with a warning.
        .systemLibrary(name: "CAvahi", providers: [.apt(["libavahi-client-dev"])]),
        // FFmpeg's demuxers, decoders and sample conversion: video and broadcast files for authoring.
        // No pkgConfig: Debian's headers sit on the compiler's own multiarch path.
        .systemLibrary(name: "CFFmpeg", providers: [.apt(["libavformat-dev", "libavcodec-dev", "libswresample-dev", "libavutil-dev"])]),
        // glibc's thread naming, which Swift's Glibc module leaves out (no library to link).
        .systemLibrary(name: "CPthread"),

        // `Locked<Value>`: Synchronization.Mutex with its ordering told to ThreadSanitizer (which
        // cannot see a contended Mutex hand-over on Linux). Every target that locks uses it.
        .target(name: "EarshotSync", dependencies: ["CPthread"]),

        // Thin typed wrappers over the POSIX calls for files: atomic write, whole-file read,
        // read-only mmap, file identity, EINTR retries. Imports only the C library.
        .target(name: "EarshotSystem"),

        // Thin typed wrappers over libsodium: SHA-256 and Ed25519 (catalog checksums and author
        // signatures), Z85 key text and author key files.
        .target(name: "EarshotCrypto", dependencies: ["CSodium", "EarshotSystem"]),

        // Thin typed wrapper over SQLite: connections, cached statements, online backup.
        .target(name: "SQLite", dependencies: ["CSQLite"]),

        // Thin typed wrapper over FFTW's single-precision real FFT.
        .target(name: "FFTW", dependencies: ["CFFTW"]),

        // Thin typed wrapper over Avahi's client library: DNS-SD publishing and browsing.
        .target(name: "Avahi", dependencies: ["CAvahi", "EarshotSync"]),

        // Thin typed wrapper over FFmpeg: containers and their streams, packets, audio decoding to
        // interleaved float. The CLI's only (through EarshotMedia); the daemon never links it.
        .target(name: "FFmpeg", dependencies: ["CFFmpeg"]),

        // Pure core, no I/O: DSP, fingerprints, signature and catalog formats, matcher, media-item
        // rules, session state machines.
        .target(name: "EarshotCore", dependencies: ["FFTW", .product(name: "RealModule", package: "swift-numerics")]),

        // Catalog authoring: the media-items CSV (tokenizing, column schema, range syntax) and
        // how its rows are assigned to references. The CLI's; never on the matching path.
        .target(name: "EarshotAuthoring", dependencies: ["EarshotCore"]),

        // What Earshot keeps on disk: catalog files mapped and verified for the core to read in
        // place, and the clients' libraries in SQLite.
        .target(name: "EarshotStore", dependencies: ["EarshotCore", "EarshotCrypto", "EarshotSystem", "SQLite"]),

        // Audio in: ALSA capture, file decoding (libsndfile; libopus for Ogg Opus), sample-rate
        // conversion (soxr), signature generation.
        .target(name: "EarshotAudio", dependencies: ["EarshotCore", "EarshotSync", "EarshotSystem", "CALSA", "COpus", "CSndfile", "CSoxr"]),

        // Live listening: streaming sessions and the managed session with its prerecording buffer.
        .target(name: "EarshotLive", dependencies: ["EarshotCore", "EarshotAudio", "EarshotSync"]),

        // Signatures of any media file the CLI takes: audio files through EarshotAudio, video and
        // broadcast files (MP4, MOV, Matroska/WebM, MPEG-TS) through FFmpeg, with track choice.
        .target(name: "EarshotMedia", dependencies: ["EarshotAudio", "EarshotCore", "EarshotSystem", "FFmpeg"]),

        // Protobuf messages generated from proto/ (scripts/generate-proto.sh), the method table and
        // conversions between them and the core types.
        .target(
            name: "EarshotWire",
            dependencies: ["EarshotCore", .product(name: "SwiftProtobuf", package: "swift-protobuf")],
            exclude: ["Generated/proto-sources.sha256"]
        ),

        // RPC (ROUTER/DEALER) and events (PUB/SUB) over ZeroMQ: a typed libzmq wrapper, one I/O
        // thread owning the sockets, the EARSHOT/1 call rules. See docs/PROTOCOL.md.
        .target(
            name: "EarshotTransport",
            dependencies: ["CZMQ", "EarshotSync", "EarshotSystem", "EarshotWire", .product(name: "SwiftProtobuf", package: "swift-protobuf")]
        ),

        // Client side of the protocol: following the daemon's state from snapshots and events
        // (the late-joiner recipe of docs/PROTOCOL.md) as a pure state machine.
        .target(name: "EarshotClient", dependencies: ["EarshotWire"]),

        // The browser dashboard of `earshot remote dashboard`: boxes followed as ordinary clients,
        // their state as JSON, the page and its WebSocket (FlyingFox). The CLI's only.
        .target(
            name: "EarshotDashboard",
            dependencies: ["EarshotClient", "EarshotSync", "EarshotTransport", "EarshotWire",
                           .product(name: "FlyingFox", package: "FlyingFox"), .product(name: "FlyingSocks", package: "FlyingFox")]
        ),

        // The daemon's parts: configuration, catalog store, RPC services, events.
        .target(
            name: "EarshotService",
            dependencies: ["Avahi", "EarshotCore", "EarshotAudio", "EarshotCrypto", "EarshotLive", "EarshotStore", "EarshotSync", "EarshotSystem",
                           "EarshotWire", "EarshotTransport", .product(name: "Logging", package: "swift-log")]
        ),
        .executableTarget(
            name: "earshotd",
            dependencies: ["EarshotService", "EarshotCore", .product(name: "Logging", package: "swift-log"),
                           .product(name: "ArgumentParser", package: "swift-argument-parser")]
        ),

        // Synthetic audio and helpers shared by tests and benchmarks.
        .target(name: "EarshotTestSupport", dependencies: ["EarshotCore"]),

        .executableTarget(
            name: "earshot",
            dependencies: [
                "Avahi", "EarshotCore", "EarshotAudio", "EarshotAuthoring", "EarshotClient", "EarshotCrypto", "EarshotDashboard", "EarshotLive", "EarshotMedia", "EarshotStore", "EarshotSync",
                "EarshotSystem", "EarshotWire", "EarshotTransport", .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
            ]
        ),
        // Counts heap allocations for the benchmark (defines malloc & co.; benchmark only).
        .target(name: "CMallocCounter", path: "benchmarks/Sources/CMallocCounter"),
        .executableTarget(
            name: "earshot-bench",
            dependencies: ["EarshotCore", "EarshotAudio", "EarshotCrypto", "EarshotLive", "EarshotStore", "EarshotSync", "EarshotSystem",
                           "EarshotWire", "EarshotTransport", "EarshotTestSupport", "CMallocCounter", "CZMQ", "SQLite"],
            path: "benchmarks/Sources/earshot-bench"
        ),

        // One test target per target it tests (EarshotTestSupport excepted: the tests' own helpers).
        .testTarget(name: "EarshotSystemTests", dependencies: ["EarshotSystem", "EarshotTestSupport"]),
        .testTarget(name: "EarshotCryptoTests", dependencies: ["EarshotCrypto", "EarshotSystem", "EarshotTestSupport"]),
        .testTarget(name: "SQLiteTests", dependencies: ["SQLite", "EarshotTestSupport"]),
        .testTarget(name: "EarshotCoreTests", dependencies: ["EarshotCore", "EarshotTestSupport"]),
        .testTarget(name: "EarshotStoreTests", dependencies: ["EarshotStore", "EarshotSystem", "EarshotCore", "EarshotCrypto", "EarshotTestSupport", "SQLite"]),
        // CSndfile: the tests write Ogg Opus files with libsndfile and compare its decoding with ours.
        .testTarget(name: "EarshotAudioTests", dependencies: ["EarshotAudio", "EarshotSync", "EarshotTestSupport", "CSndfile"]),
        .testTarget(name: "EarshotMediaTests", dependencies: ["EarshotMedia", "EarshotAudio", "EarshotCore", "FFmpeg", "EarshotTestSupport"]),
        .testTarget(name: "EarshotLiveTests", dependencies: ["EarshotLive", "EarshotAudio", "EarshotTestSupport"]),
        .testTarget(name: "EarshotWireTests", dependencies: ["EarshotWire", "EarshotTestSupport"]),
        .testTarget(name: "EarshotClientTests", dependencies: ["EarshotClient", "EarshotWire"]),
        .testTarget(name: "EarshotDashboardTests", dependencies: ["EarshotDashboard", "EarshotClient", "EarshotWire"]),
        // Logging: the in-process daemon's logger keeps what it logs.
        .testTarget(name: "EarshotServiceTests", dependencies: ["Avahi", "EarshotService", "EarshotAudio", "EarshotCrypto", "EarshotStore", "EarshotSync", "EarshotSystem", "EarshotWire", "EarshotTransport", "EarshotTestSupport", "SQLite",
                                                                .product(name: "Logging", package: "swift-log")]),
        .testTarget(
            name: "EarshotTransportTests",
            dependencies: ["EarshotTransport", "EarshotSync", "EarshotWire", "EarshotTestSupport", "CZMQ",
                           .product(name: "SwiftProtobuf", package: "swift-protobuf")]
        ),
        .testTarget(name: "EarshotCLITests", dependencies: ["EarshotCore", "EarshotAudio", "EarshotSync", "EarshotTestSupport"]),
        .testTarget(name: "EarshotAuthoringTests", dependencies: ["EarshotAuthoring", "EarshotCore"]),
        // Rules of the repository as a whole that the compiler cannot check: the import table of
        // docs/ARCHITECTURE.md against Package.swift and the sources, locks, links, the core's purity.
        .testTarget(name: "RepositoryRuleTests", dependencies: ["EarshotTestSupport"]),
    ]
)

// libFuzzer harnesses (fuzz/README.md). Declared only when EARSHOT_FUZZ is set — scripts/fuzz.sh
// sets it and builds with -sanitize=fuzzer,address — so the normal build and tests never see them.
if Context.environment["EARSHOT_FUZZ"] != nil {
    let harnesses: [(name: String, dependencies: [Target.Dependency])] = [
        ("fuzz-envelope", ["EarshotWire", "EarshotTransport", "EarshotCore",
                           .product(name: "SwiftProtobuf", package: "swift-protobuf")]),
        ("fuzz-signature", ["EarshotCore"]),
        ("fuzz-catalog", ["EarshotCore"]),
        ("fuzz-csv", ["EarshotAuthoring", "EarshotCore"]),
        ("fuzz-cues", ["EarshotAuthoring", "EarshotCore"]),
        ("fuzz-config", ["EarshotService"]),
    ]
    package.targets.append(.target(
        name: "FuzzSupport", path: "fuzz/Sources/FuzzSupport", swiftSettings: [.enableExperimentalFeature("Extern")]))
    for harness in harnesses {
        package.targets.append(.executableTarget(
            name: harness.name, dependencies: harness.dependencies + ["FuzzSupport"], path: "fuzz/Sources/\(harness.name)",
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]))
    }
}
