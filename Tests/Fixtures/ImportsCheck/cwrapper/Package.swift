// swift-tools-version:6.1
import PackageDescription

// A fixture of scripts/check-imports.py, never built: IngestCore must be built on no C wrapper, neither directly
// (NativeSystem) nor through a pure-Swift target that is (Helper, built on NativeSystem).
let package = Package(
    name: "fixture",
    targets: [
        .target(name: "NativeSystem"),
        .target(name: "Helper", dependencies: ["NativeSystem"]),
        .target(name: "IngestCore", dependencies: ["Helper", .product(name: "Logging", package: "swift-log")]),
    ]
)
