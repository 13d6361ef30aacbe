import Foundation
import IngestCore

extension TemplateScope {
    /// A storage key made safe: control characters become `_`, leading `/`, empty and `.` segments go, and a
    /// `..` segment fails the file (it would point outside the destination).
    package func sanitizedKey(_ raw: String, option: String = "key") throws -> String {
        var text = String.UnicodeScalarView()
        for scalar in raw.unicodeScalars {
            text.append(scalar.properties.generalCategory == .control ? "_" : scalar)
        }
        let segments = String(text).split(separator: "/", omittingEmptySubsequences: true).filter { $0 != "." }
        if segments.contains("..") {
            throw ItemFailed(
                stage: stage, rule: .option(option), message: "the \(option) '\(raw)' contains a '..' segment",
                expected: "a relative key inside the destination", actual: raw)
        }
        guard !segments.isEmpty else {
            throw ItemFailed(
                stage: stage, rule: .option(option), message: "the \(option) is empty after rendering '\(raw)'")
        }
        return segments.joined(separator: "/")
    }
}
