extension String {
    /// Appends `text` with each Unicode scalar `escape` answers for replaced by that answer, the rest as it is: the
    /// one loop behind the escapers (JSON, HTML, XML, terminal), so each of them is only its table.
    package mutating func append(_ text: String, escaping escape: (Unicode.Scalar) -> String?) {
        for scalar in text.unicodeScalars {
            if let replacement = escape(scalar) { self += replacement } else { unicodeScalars.append(scalar) }
        }
    }
}
