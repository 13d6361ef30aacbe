import Foundation
import Testing

@testable import IngestTestSupport

/// scripts/check-imports.py, which `make test` runs before the build: the package as it is passes, and the fixture
/// packages where it must fail (an undeclared import, a test target above its layer, the model built on C,
/// ARCHITECTURE.md's table unlike Package.swift) fail with the problems they expect, so the check cannot pass by
/// finding nothing.
@Suite struct ImportsCheckTests {
    static let script = TestPaths.root + "/scripts/check-imports.py"

    @Test func thePackageHoldsItsLayers() throws {
        let result = try runCommand("/usr/bin/env", ["python3", Self.script])
        #expect(result.status == 0, "\(result.stderr)")
    }

    @Test func theFixturesFailAsTheyExpect() throws {
        let result = try runCommand("/usr/bin/env", ["python3", Self.script, "--self-test"])
        #expect(result.status == 0, "\(result.stderr)")
    }

    @Test func anUndeclaredImportIsNamedByFileAndLine() throws {
        let fixture = TestPaths.root + "/Tests/Fixtures/ImportsCheck/undeclared"
        let result = try runCommand("/usr/bin/env", ["python3", Self.script, "--root", fixture])
        #expect(result.status == 1)
        #expect(result.stderr.contains("Sources/Low/Low.swift:3: imports High"), "\(result.stderr)")
        #expect(!result.stderr.contains("json"), "an import in a string literal is not one: \(result.stderr)")
    }

    /// #32 §2: IngestCore is built without C, and a C wrapper brought in through a pure-Swift target counts too.
    @Test func theModelBuiltOnACWrapperIsNamed() throws {
        let fixture = TestPaths.root + "/Tests/Fixtures/ImportsCheck/cwrapper"
        let result = try runCommand("/usr/bin/env", ["python3", Self.script, "--root", fixture])
        #expect(result.status == 1)
        #expect(
            result.stderr.contains("IngestCore is built on NativeSystem (through Helper), a C module or wrapper"),
            "\(result.stderr)")
    }
}
