import Foundation

/// Tests/Fixtures/h2server.py (hypercorn: a real HTTP/2 server) over TLS, with a certificate for 127.0.0.1 signed by
/// a CA made for this server with `openssl`; pipelines trust it through `ca_bundle: <caBundle>`. `stop()` ends it
/// (the process this object started). `shared()` is one server for the test process: tests tell their requests
/// apart by path, so a suite pays for one start (hypercorn's import, the certificates) and one stop, not one per test.
final class H2Server: Sendable {
    let port: Int
    let folder: TemporaryFolder
    /// The PEM file of the test CA that signed the server's certificate.
    let caBundle: String
    private let server: FixtureProcess

    init() throws {
        folder = try TemporaryFolder("h2server")
        caBundle = folder.path + "/ca.pem"
        let (cert, key) = try Self.makeCertificate(in: folder.path)
        server = try FixtureProcess(
            "h2server.py", ["--tls", cert, key], portFile: folder.path + "/port",
            attempts: 1500,  // hypercorn takes seconds to import on a loaded machine: up to ~30 s
            failure: "h2server.py did not start (is hypercorn installed? `make test-deps`)")
        port = server.ports[0]
    }

    /// The test process's server, started on first use; a failed start is remembered. At exit it is killed (it would
    /// also leave on its own: h2server.py exits when its parent is gone) and its folder removed.
    static func shared() throws -> H2Server { try instance.get() }

    private static let instance: Result<H2Server, any Error> = {
        let result = Result { try H2Server() }
        if case .success = result {
            atexit {
                guard case .success(let server) = H2Server.instance else { return }
                server.server.stop(signal: SIGKILL)
                server.folder.remove()
            }
        }
        return result
    }()

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
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", caKey,
                "-out", ca, "-days", "2", "-subj",
                "/CN=ingest test CA", "-addext", "basicConstraints=critical,CA:TRUE", "-addext",
                "keyUsage=critical,keyCertSign",
            ],
            [
                "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out",
                request, "-subj", "/CN=127.0.0.1",
            ],
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
        try fixtureState(base + "/_state", caBundle: caBundle)["requests"] as? [String: Int] ?? [:]
    }

    func stop() {
        server.stop()
        folder.remove()
    }

    deinit { stop() }
}
