// swift-tools-version:6.1
import PackageDescription

// A fixture of scripts/check-imports.py, never built: High may import Low; Low and LowTests may not import High.
let package = Package(
    name: "fixture",
    targets: [
        .target(name: "Low", dependencies: [.product(name: "Logging", package: "swift-log")]),
        .target(name: "High", dependencies: ["Low"]),
        .testTarget(name: "LowTests", dependencies: ["Low"]),
    ]
)
