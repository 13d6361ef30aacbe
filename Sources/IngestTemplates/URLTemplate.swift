import Foundation
import IngestCore

/// Where a template value stands in a URL, which decides how it is written: a file name such as `h#frag.mov` or
/// `q?x=1&X-Amz-Signature=evil.mov` must reach the server as that name, not cut the URL short or add parameters.
/// The place is read from the URL as rendered up to the value (RFC 3986: `://` opens the host, then `/` the path,
/// `?` the query, `&` and `=` its names and values, `#` the fragment).
package enum URLPlacement: Equatable, Sendable {
    /// At the start, before `://`: a whole URL (`{{ticket.upload_url}}`) or a base URL, kept as it is.
    case scheme
    /// After `://`, before the path: a host (`https://{{env.HOST}}/…`), kept as it is.
    case host
    /// In the path: percent-encoded, `/` kept as a separator (`{{file.path}}`), `.` and `..` segments encoded.
    case path
    case queryName
    case queryValue
    case fragment
    /// Lint only: right after a value kept as it is, whose text (unknown before a run) decides the place.
    case after(String)

    /// A value here is kept as it is: it is the URL, or its scheme and host.
    var keepsValue: Bool { self == .scheme || self == .host }

    /// Where `text` leaves a URL that was at this place. A value kept as it is moves the place like literal text.
    func advanced(over text: String) -> URLPlacement {
        var place = self
        var rest = text.unicodeScalars[...]
        while let scalar = rest.first {
            if place == .scheme, rest.starts(with: "://".unicodeScalars) {
                place = .host
                rest = rest.dropFirst(3)
            } else {
                place = place.after(scalar)
                rest = rest.dropFirst()
            }
        }
        return place
    }

    private func after(_ scalar: Unicode.Scalar) -> URLPlacement {
        switch (self, scalar) {
        case (.fragment, _), (_, "#"): return .fragment
        case (.scheme, "/"), (.host, "/"), (.after, "/"): return .path
        case (.scheme, "?"), (.host, "?"), (.path, "?"), (.after, "?"): return .queryName
        case (.queryName, "&"), (.queryValue, "&"), (.after, "&"): return .queryName
        case (.queryName, "="), (.after, "="): return .queryValue
        default: return self
        }
    }

    /// `value` written for this place: kept in the scheme and host, else every byte but `A-Z a-z 0-9 - . _ ~` (and
    /// `/` in the path) as `%XX` — the encoding S3 keys get (`AWSURI`), so `+` is never read as a space.
    func encode(_ value: String) -> String {
        switch self {
        case .scheme, .host: return value
        case .path:
            return value.split(separator: "/", omittingEmptySubsequences: false).map { segment in
                // A value's `.` or `..` segment would be folded away by curl or the server, climbing the path.
                segment == "." || segment == ".."
                    ? String(repeating: "%2E", count: segment.count)
                    : AWSURI.encode(String(segment))
            }.joined(separator: "/")
        case .queryName, .queryValue, .fragment, .after: return AWSURI.encode(value)
        }
    }

    /// What lint says of a value placed here.
    package func rule(for variable: String, raw: Bool) -> String {
        if raw, !keepsValue {
            return "{{\(variable) | raw}} is sent as it is, not encoded: its text can add path segments, "
                + "parameters or a fragment"
        }
        switch self {
        case .scheme, .host:
            return "{{\(variable)}} starts the URL (a whole URL, or its scheme and host): kept as it is"
        case .path:
            return "{{\(variable)}} is in the URL's path: percent-encoded, '/' kept as a separator "
                + "(`| raw` sends it as it is)"
        case .queryName:
            return "{{\(variable)}} is a query parameter name: percent-encoded, '&', '=', '#' and '+' included "
                + "(`| raw` sends it as it is)"
        case .queryValue:
            return "{{\(variable)}} is a query value: percent-encoded, '&', '=', '#' and '+' included "
                + "(`| raw` sends it as it is)"
        case .fragment:
            return "{{\(variable)}} is in the URL's fragment: percent-encoded (`| raw` sends it as it is)"
        case .after(let earlier):
            return "{{\(variable)}} follows {{\(earlier)}}, which is kept as it is: encoded for the part of the URL "
                + "that {{\(earlier)}}'s value ends in (path, query value …)"
        }
    }
}

extension Template {
    /// The text as a URL: each value percent-encoded for where it stands (`URLPlacement`), read from the URL as
    /// rendered so far; a value at the start (a whole URL or a host) and one filtered `| raw` are kept as they are.
    package func renderURL(_ scope: TemplateScope) throws -> String {
        var out = ""
        var place = URLPlacement.scheme
        for part in parts {
            let text = try part.render(scope)
            if part.isVariable, !part.isRaw, !place.keepsValue, !scope.isRehearsalPlaceholder(text, of: part) {
                out += place.encode(text)
            } else {
                out += text
                place = place.advanced(over: text)
            }
        }
        return out
    }

    /// Each variable of a URL template with the place it stands, as the file says it (lint's notes): a value kept
    /// as it is leaves the place after it to its text, known only when the file runs.
    package var urlPlacements: [(variable: String, placement: URLPlacement, raw: Bool)] {
        var found: [(String, URLPlacement, Bool)] = []
        var place = URLPlacement.scheme
        for part in parts {
            switch part {
            case .text(let text): place = place.advanced(over: text)
            case .variable(let name), .filtered(let name, _):
                found.append((name, place, part.isRaw))
                if part.isRaw || place.keepsValue { place = .after(name) }
            }
        }
        return found
    }
}

extension Template.Part {
    var isVariable: Bool { variableName != nil }

    var variableName: String? {
        switch self {
        case .text: return nil
        case .variable(let name), .filtered(let name, _): return name
        }
    }

    /// `{{x | raw}}`: the value goes into a URL as it is, not encoded.
    var isRaw: Bool {
        if case .filtered(_, let filters) = self { return filters.contains(.raw) }
        return false
    }
}

extension TemplateScope {
    /// A dry run's stand-in for what only a server could say (`<ticket.visit_id>`): shown as it is in the URL.
    func isRehearsalPlaceholder(_ text: String, of part: Template.Part) -> Bool {
        guard let name = part.variableName, text == "<\(name)>" else { return false }
        return item.templateValues["placeholder:" + String(name.prefix { $0 != "." })] != nil
    }
}
