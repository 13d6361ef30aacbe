import Foundation
import IngestNative

/// Tests/Fixtures/h2server.py (hypercorn: a real HTTP/2 server) over TLS, with a certificate for 127.0.0.1 signed by
/// a CA made for this server with `openssl`; pipelines trust it through `ca_bundle: <caBundle>`. `stop()` ends it
/// (the process this object started).
final class H2Server {
    let port: Int
    let folder: TemporaryFolder
    /// The PEM file of the test CA that signed the server's certificate.
    let caBundle: String
    private let process: Process

    init() throws {
        folder = try TemporaryFolder("h2server")
        caBundle = folder.path + "/ca.pem"
        let (cert, key) = try Self.makeCertificate(in: folder.path)
        let portFile = folder.path + "/port"
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "python3", TestPaths.root + "/Tests/Fixtures/h2server.py", "--port-file", portFile, "--tls", cert, key,
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        var found: Int?
        for _ in 0..<1500 {  // hypercorn takes seconds to import on a loaded machine: up to ~30 s
            if let text = try? String(contentsOfFile: portFile, encoding: .utf8), let value = Int(text) {
                found = value
                break
            }
            if !process.isRunning { break }
            usleep(20_000)
        }
        guard let found else {
            if process.isRunning { process.terminate() }
            folder.remove()
            throw FixtureError(message: "h2server.py did not start (is hypercorn installed? `make deps`)")
        }
        port = found
    }

    var base: String { "https://127.0.0.1:\(port)" }

    /// A CA (`ca.pem`) and a server certificate for 127.0.0.1 it signed (`cert.pem`, `key.pem`).
    private static func makeCertificate(in folder: String) throws -> (cert: String, key: String) {
        let (ca, caKey, cert, key) = (folder + "/ca.pem", folder + "/ca.key", folder + "/cert.pem", folder + "/key.pem")
        let request = folder + "/server.csr"
        let extensions = folder + "/server.ext"
        try "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n".write(
            toFile: extensions, atomically: true, encoding: .utf8)
        let steps: [[String]] = [
            [
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", caKey, "-out", ca, "-days", "2", "-subj",
                "/CN=ingest test CA", "-addext", "basicConstraints=critical,CA:TRUE", "-addext",
                "keyUsage=critical,keyCertSign",
            ],
            ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", request, "-subj", "/CN=127.0.0.1"],
            [
                "x509", "-req", "-in", request, "-CA", ca, "-CAkey", caKey, "-CAcreateserial", "-out", cert, "-days",
                "2", "-extfile", extensions,
            ],
        ]
        for step in steps {
            let made = try runTool("openssl", step)
            guard made.status == 0 else { throw FixtureError(message: "openssl \(step[0]) failed: \(made.stderr)") }
        }
        return (cert, key)
    }

    /// How many requests arrived on each path (`GET /_state`), asked over HTTP/2 trusting the test CA.
    func requests() throws -> [String: Int] {
        var request = HTTPRequest(method: "GET", url: base + "/_state")
        request.caBundle = caBundle
        let result = HTTPClient.shared.perform(request)
        guard case .success(let response) = result, response.status == 200,
            let object = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
        else { throw FixtureError(message: "GET /_state failed: \(result)") }
        return object["requests"] as? [String: Int] ?? [:]
    }

    func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
        folder.remove()
    }

    deinit { stop() }
}
