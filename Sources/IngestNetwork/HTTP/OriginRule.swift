import Foundation
import IngestCore

/// `scheme://host[:port]` as an origin is compared (RFC 6454): scheme and host lowercased, the scheme's default port
/// left out; for `allow_origins`, whose entries must be exactly that (a path, a query or a user name is refused
/// when the file loads, as it would not mean what it seems to).
package struct Origin: OptionValue, Hashable, Sendable, CustomStringConvertible {
    package let text: String

    /// The origin of `url`; the URL itself when it has no host (it then matches no other).
    package init(of url: String) {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
            let host = components.encodedHost?.lowercased()
        else {
            text = url
            return
        }
        let defaultPort = scheme == "https" ? 443 : scheme == "http" ? 80 : nil
        let port = components.port.flatMap { $0 == defaultPort ? nil : ":\($0)" } ?? ""
        text = "\(scheme)://\(host)\(port)"
    }

    package init(from node: ConfigNode) throws {
        let written = try String(from: node)
        guard let components = URLComponents(string: written), ["http", "https"].contains(components.scheme),
            components.host?.isEmpty == false, components.user == nil, components.password == nil,
            components.query == nil, components.fragment == nil, ["", "/"].contains(components.percentEncodedPath)
        else {
            throw node.error(
                "\(ConfigNode.echo(written)) is not an origin: write scheme, host and port only "
                    + "(https://uploads.example.com, http://127.0.0.1:8081)")
        }
        self.init(of: written)
    }

    package static var jsonSchema: JSONValue {
        ["type": "string", "pattern": "^[Hh][Tt][Tt][Pp][Ss]?://[^/?#@]+/?$"]
    }

    package var description: String { text }
}

/// The rule for every URL a server hands back — a tus upload's `Location`, a redirect's target: the headers a
/// stage configures (`headers:`, credentials among them) were written for the origin of the stage's own URL, and
/// go only there and to the origins the stage names in `allow_origins`. A URL a stage renders from an earlier
/// stage's answer (`{{ticket.upload_url}}`) is that stage's own URL: its own headers go with it, and no other
/// stage's ever do.
package struct OriginRule: Sendable {
    /// The origin the headers were configured for.
    package let home: Origin
    package let allowed: [Origin]

    package init(configuredFor url: String, allowing allowed: [Origin]) {
        home = Origin(of: url)
        self.allowed = allowed
    }

    /// True when the configured headers may go to `url`.
    package func permits(_ url: String) -> Bool {
        let origin = Origin(of: url)
        return origin == home || allowed.contains(origin)
    }

    /// `configured` when they may go to `url`, else none of them.
    package func headers(_ configured: [(name: String, value: String)], for url: String)
        -> [(name: String, value: String)]
    {
        permits(url) ? configured : []
    }

    /// For `-v`: `Authorization withheld from PATCH http://b:8081/files/1: the creation answer's Location names
    /// another origin (http://b:8081) than the one it was configured for (http://a:8080); name it in allow_origins
    /// to send it`.
    package func withheld(_ names: [String], requests: String, url: String, handedBackBy what: String) -> String {
        let list = names.joined(separator: ", ")
        return "\(list) withheld from \(requests) \(Redaction.url(url)): \(what) names another origin "
            + "(\(Origin(of: url))) than the one \(names.count == 1 ? "it was" : "they were") configured for "
            + "(\(home)); name it in allow_origins to send \(names.count == 1 ? "it" : "them")"
    }
}
