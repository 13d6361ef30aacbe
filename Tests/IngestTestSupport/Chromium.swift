import Foundation

/// Debian's headless Chromium, for tests that look at an HTML report as a person's browser shows it: the DOM
/// after the page's scripts ran (`--dump-dom`), or a screenshot. Each call gets a profile folder of its own, so
/// tests running at once do not share one.
enum Chromium {
    static let executable: String? = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }

    /// The page at `url` after its scripts ran and it loaded.
    static func dumpDOM(_ url: String) throws -> String {
        try run(["--dump-dom", url]).stdout
    }

    /// A PNG screenshot of the page at `url`, `width`×`height` CSS pixels, written to `path`.
    static func screenshot(_ url: String, to path: String, width: Int = 1280, height: Int = 900) throws {
        let result = try run(["--screenshot=\(path)", "--window-size=\(width),\(height)", "--hide-scrollbars", url])
        guard FileManager.default.fileExists(atPath: path) else {
            throw ChromiumError(description: "no screenshot: \(result.stderr.suffix(600))")
        }
    }

    private static func run(_ arguments: [String]) throws -> CommandResult {
        guard let executable else { throw ChromiumError(description: "chromium is not installed (make test-deps)") }
        let profile = NSTemporaryDirectory() + "/chromium-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: profile) }
        return try runCommand(
            executable,
            [
                "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
                "--user-data-dir=\(profile)",
            ] + arguments)
    }
}

struct ChromiumError: Error, CustomStringConvertible {
    var description: String
}
