import Foundation

/// A name a template may read (`file`, `probe`, a stage's `as:` name) and its fields: nil when they are only
/// known at run time (a server's answer), empty when the value has none (`{{sha256}}`).
package struct TemplateOffer: Sendable, Equatable {
    package var name: String
    package var fields: [String]?
    /// False for names that are only a namespace (`{{file}}` alone has no value).
    package var wholeValue: Bool

    package init(name: String, fields: [String]?, wholeValue: Bool = true) {
        self.name = name
        self.fields = fields
        self.wholeValue = wholeValue
    }
}
