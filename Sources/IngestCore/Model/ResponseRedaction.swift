import Foundation

extension Redaction {
    /// A JSON response for reports: secret form fields (`x-amz-signature` …), tokens and signed-URL signatures
    /// replaced; templates still read the original.
    package static func json(_ value: JSONValue) -> JSONValue {
        let tokenNames: Set<String> = ["token", "access_token", "refresh_token", "id_token", "password", "secret"]
        switch value {
        case .string(let text): return .string(self.text(url(text)))
        case .array(let items): return .array(items.map(json))
        case .object(let object):
            var copy = JSONObject()
            for (key, item) in object.pairs {
                if case .string(let text) = item {
                    let masked = fieldValue(name: key, value: text)
                    copy[key] = .string(
                        tokenNames.contains(key.lowercased())
                            ? placeholder : masked == text ? self.text(url(text)) : masked)
                } else {
                    copy[key] = json(item)
                }
            }
            return .object(copy)
        default: return value
        }
    }
}
