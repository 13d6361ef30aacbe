// swift-tools-version:6.1
import PackageDescription

/// C libraries are reached through system-library targets that only link (as FoundationNetworking does
/// for libcurl); a small C target per library (C<Name>Shims) holds what Swift cannot import: variadic calls and
/// macros. Above them one Native<Name> target per library wraps its C calls, and nothing else.
let package = Package(
    name: "ingest",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "Ingest", targets: ["Ingest"]),
        .executable(name: "ingest", targets: ["ingest"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        // `make docs`: `swift package generate-documentation --target Ingest` builds Sources/Ingest/Ingest.docc.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CFFmpeg",
            pkgConfig: "libavformat libavcodec libavutil libswresample libswscale",
            providers: [
                .apt(["libavformat-dev", "libavcodec-dev", "libavutil-dev", "libswresample-dev", "libswscale-dev"])
            ]
        ),
        .systemLibrary(name: "CTurboJPEG", pkgConfig: "libturbojpeg", providers: [.apt(["libturbojpeg0-dev"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "CExif", pkgConfig: "libexif", providers: [.apt(["libexif-dev"])]),
        .systemLibrary(name: "CHeif", pkgConfig: "libheif", providers: [.apt(["libheif-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CPostgres", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        .systemLibrary(name: "CXXHash", pkgConfig: "libxxhash", providers: [.apt(["libxxhash-dev"])]),
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        // The C calls Swift cannot make (macros, variadic calls, callbacks), one shim target per library.
        .target(name: "CFFmpegShims", dependencies: ["CFFmpeg"]),
        .target(name: "CCurlShims", dependencies: ["CCurl"]),
        .target(name: "CSQLiteShims", dependencies: ["CSQLite"]),
        .target(name: "CSystemShims"),
        // The bottom layer: one target per C library, each a class per C resource over its C module and nothing
        // else; what two of them share (SystemError, FileStatus, PlanarImage, ByteStreamObserver) is NativeSystem's,
        // which a wrapper depends on only when it uses it.
        .target(name: "NativeSystem", dependencies: ["CSystemShims"]),
        .target(name: "NativeFFmpeg", dependencies: ["CFFmpeg", "CFFmpegShims", "NativeSystem"]),
        .target(name: "NativeJPEG", dependencies: ["CTurboJPEG", "NativeSystem"]),
        .target(name: "NativeHEIF", dependencies: ["CHeif"]),
        .target(name: "NativeExif", dependencies: ["CExif"]),
        .target(name: "NativeCurl", dependencies: ["CCurl", "CCurlShims", "NativeSystem"]),
        .target(name: "NativeSQLite", dependencies: ["CSQLite", "CSQLiteShims"]),
        .target(name: "NativePostgres", dependencies: ["CPostgres"]),
        .target(name: "NativeXXHash", dependencies: ["CXXHash", "NativeSystem"]),
        .target(name: "NativeZlib", dependencies: ["CZlib"]),
        // The library in layers; each target imports only the ones listed (ARCHITECTURE.md), so a cycle between
        // layers does not compile. `Ingest` is the one product: it re-exports the public surface.
        // The model, built without C (scripts/check-imports.py holds it): what it needs from C is a plain value here.
        .target(
            name: "IngestCore",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto"), .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The model's files on disk: the one way to hash (SHA-256, MD5, XXH3, CRC), their `stat` as the model's
        // ListedStatus, the `changed` check.
        .target(
            name: "IngestFiles",
            dependencies: [
                "IngestCore", "NativeSystem", "NativeXXHash", "NativeZlib",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .target(
            name: "IngestMedia",
            dependencies: ["IngestCore", "NativeSystem", "NativeFFmpeg", "NativeJPEG", "NativeHEIF", "NativeExif"]
        ),
        .target(name: "IngestTemplates", dependencies: ["IngestCore", "IngestFiles", "IngestMedia"]),
        .target(
            name: "IngestNetwork",
            dependencies: [
                "IngestCore", "IngestFiles", "IngestTemplates", "NativeSystem", "NativeCurl", "NativeZlib",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "IngestJournal", dependencies: ["IngestCore", "NativeSystem", "NativeSQLite", "NativePostgres"]
        ),
        .target(
            name: "IngestStages",
            dependencies: [
                "IngestCore", "IngestFiles", "IngestMedia", "IngestTemplates", "IngestNetwork", "IngestJournal",
                "NativeSystem", "NativeCurl", "NativeFFmpeg", "NativeJPEG", "NativeHEIF", "NativeExif",
                .product(name: "Crypto", package: "swift-crypto"), .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "IngestConfig",
            dependencies: [
                "IngestCore", "IngestFiles", "IngestTemplates", "IngestStages", "NativeSystem",
                .product(name: "Yams", package: "Yams"),
            ]
        ),
        .target(
            name: "IngestRun",
            dependencies: [
                "IngestCore", "IngestFiles", "IngestMedia", "IngestTemplates", "IngestJournal", "IngestStages",
                "IngestConfig", "NativeSystem", "NativeCurl", "NativeFFmpeg", .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        .target(
            name: "IngestCheck",
            dependencies: [
                "IngestCore", "IngestTemplates", "IngestStages", "IngestConfig", "IngestRun", "NativeSystem",
            ]
        ),
        .target(
            name: "Ingest",
            dependencies: [
                "IngestCore", "IngestFiles", "IngestMedia", "IngestTemplates", "IngestNetwork", "IngestJournal", "IngestStages",
                "IngestConfig", "IngestRun", "IngestCheck",
            ]
        ),
        // The fuzz entry points: a test harness, not part of the `Ingest` product (ingest-fuzz and the tests use it).
        .target(
            name: "IngestFuzzing",
            dependencies: [
                "IngestCore", "IngestMedia", "IngestTemplates", "IngestNetwork", "IngestStages", "IngestConfig",
                "NativeFFmpeg",
            ]
        ),
        .executableTarget(
            name: "ingest",
            dependencies: [
                "IngestCore", "IngestMedia", "IngestNetwork", "IngestJournal", "IngestStages", "IngestConfig",
                "IngestRun", "IngestCheck", "NativeCurl", "NativeFFmpeg", "NativeHEIF", "NativeJPEG", "NativePostgres",
                "NativeSQLite", .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Built with -sanitize=fuzzer,address -D INGEST_FUZZ by `make fuzz` (libFuzzer then supplies main); the
        // plain build makes it a replayer: `ingest-fuzz TARGET FILE...` runs files through the same entries.
        .executableTarget(name: "ingest-fuzz", dependencies: ["IngestFuzzing"], path: "Sources/IngestFuzz"),
        // The tests, one target per layer (as swift-nio has them): each depends only on its layer and the layers that
        // layer is built on, so a test of IngestCore cannot use IngestStages. The support targets are test harness,
        // not in the `Ingest` product: servers and processes the tests start (IngestTestSupport, PostgreSQL in
        // IngestJournalTestSupport), the model's and the stages' test helpers (IngestCoreTestSupport, IngestStagesTestSupport).
        .target(
            name: "IngestTestSupport", dependencies: ["NativeSystem", "NativeCurl"], path: "Tests/IngestTestSupport"),
        .target(
            name: "IngestJournalTestSupport", dependencies: ["NativePostgres", "IngestTestSupport"],
            path: "Tests/IngestJournalTestSupport"
        ),
        .target(name: "IngestCoreTestSupport", dependencies: ["IngestCore"], path: "Tests/IngestCoreTestSupport"),
        .target(
            name: "IngestStagesTestSupport",
            dependencies: ["IngestCore", "IngestStages", "IngestCoreTestSupport", "IngestTestSupport"],
            path: "Tests/IngestStagesTestSupport"
        ),
        // The Native layer's tests: the C wrappers alone.
        .testTarget(
            name: "IngestNativeTests",
            dependencies: [
                "NativeSystem", "NativeCurl", "NativeFFmpeg", "NativeJPEG", "NativeHEIF", "NativeExif", "NativeSQLite",
                "NativePostgres", "NativeXXHash", "NativeZlib", "IngestTestSupport",
            ]
        ),
        // The model's tests, built without C as the model is.
        .testTarget(name: "IngestCoreTests", dependencies: ["IngestCore"]),
        .testTarget(
            name: "IngestFilesTests",
            dependencies: ["IngestFiles", "IngestCore", "IngestTestSupport", "IngestCoreTestSupport", "NativeSystem"]
        ),
        .testTarget(
            name: "IngestMediaTests",
            dependencies: [
                "IngestMedia", "IngestCore", "IngestTestSupport", "IngestCoreTestSupport", "NativeSystem",
                "NativeFFmpeg", "NativeJPEG", "NativeHEIF", "NativeExif",
            ]
        ),
        .testTarget(
            name: "IngestJournalTests",
            dependencies: [
                "IngestJournal", "IngestCore", "IngestTestSupport", "IngestCoreTestSupport", "NativeSystem",
                "NativeSQLite", "NativePostgres",
            ]
        ),
        .testTarget(
            name: "IngestTemplatesTests",
            dependencies: [
                "IngestTemplates", "IngestMedia", "IngestCore", "IngestTestSupport", "IngestCoreTestSupport",
            ]
        ),
        .testTarget(
            name: "IngestNetworkTests",
            dependencies: [
                "IngestNetwork", "IngestTemplates", "IngestMedia", "IngestCore", "IngestTestSupport",
                "IngestCoreTestSupport", "NativeSystem", "NativeCurl",
            ]
        ),
        .testTarget(
            name: "IngestStagesTests",
            dependencies: [
                "IngestStages", "IngestNetwork", "IngestJournal", "IngestTemplates", "IngestMedia", "IngestCore",
                "IngestTestSupport", "IngestCoreTestSupport", "IngestStagesTestSupport", "NativeSystem",
                "IngestJournalTestSupport",
            ]
        ),
        .testTarget(
            name: "IngestConfigTests",
            dependencies: [
                "IngestConfig", "IngestStages", "IngestNetwork", "IngestJournal", "IngestTemplates", "IngestMedia",
                "IngestCore", "IngestTestSupport", "IngestCoreTestSupport", "IngestStagesTestSupport",
                "IngestJournalTestSupport",
            ]
        ),
        .testTarget(
            name: "IngestFuzzingTests",
            dependencies: [
                "IngestFuzzing", "IngestConfig", "IngestStages", "IngestNetwork", "IngestTemplates", "IngestMedia",
                "IngestCore", "IngestTestSupport",
            ]
        ),
        .testTarget(
            name: "IngestRunTests",
            dependencies: [
                "IngestRun", "IngestConfig", "IngestStages", "IngestNetwork", "IngestJournal", "IngestTemplates",
                "IngestMedia", "IngestCore", "IngestTestSupport", "IngestCoreTestSupport", "IngestStagesTestSupport",
                "NativeSystem", "NativeJPEG", "IngestJournalTestSupport",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "IngestCheckTests",
            dependencies: [
                "IngestCheck", "IngestRun", "IngestConfig", "IngestStages", "IngestNetwork", "IngestJournal",
                "IngestTemplates", "IngestMedia", "IngestCore", "IngestTestSupport", "IngestCoreTestSupport",
                "IngestStagesTestSupport", "NativeCurl", "IngestJournalTestSupport",
            ]
        ),
        // The embedder's view: the `Ingest` product alone (docs/library.md's example, compiled and run).
        .testTarget(name: "IngestTests", dependencies: ["Ingest", "IngestCore", "IngestTestSupport"]),
        // End to end: the tests that run the built `ingest` (and the documents' commands), over every layer.
        .testTarget(
            name: "IngestCLITests",
            dependencies: [
                "IngestCheck", "IngestRun", "IngestConfig", "IngestStages", "IngestNetwork", "IngestJournal",
                "IngestTemplates", "IngestMedia", "IngestFiles", "IngestCore", "IngestTestSupport", "IngestCoreTestSupport",
                "IngestStagesTestSupport", "NativeSystem", "NativeCurl", "NativeJPEG", "NativeSQLite", "NativePostgres",
                "IngestJournalTestSupport", .product(name: "Logging", package: "swift-log"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
