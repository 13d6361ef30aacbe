import Foundation

/// The project's virtual environment, `.build/venv`, which `make test` (target test-deps) fills with the Python tools
/// Tests/requirements.txt pins: `weed`, moto, hypercorn, fastapi-tusd, jsonschema. The tests start those tools from
/// there, so `swift test --filter X` finds them without activating anything. Without the venv (a machine set up by
/// hand), the first `python3` on PATH is used, as before.
enum TestVenv {
    static let bin = TestPaths.root + "/.build/venv/bin"

    /// The venv's python when it exists, else `python3` (for `/usr/bin/env`): for the scripts that import a package
    /// of Tests/requirements.txt.
    static var python: String {
        FileManager.default.isExecutableFile(atPath: bin + "/python3") ? bin + "/python3" : "python3"
    }
}
