extension ConfigNode {
    /// A mapping's pairs in the file's order, for the options that are a mapping of names to something (`fallback:`,
    /// `headers:`, `files:` …). Null reads as no pairs unless `nonEmpty`; anything else, and with `nonEmpty` null or
    /// an empty mapping, throws "expected a mapping of `what`, found …".
    package func mappingPairs(of what: String, nonEmpty: Bool = false) throws -> [(key: ConfigNode, value: ConfigNode)]
    {
        if case .mapping(let pairs) = kind, !(nonEmpty && pairs.isEmpty) { return pairs }
        if isNull, !nonEmpty { return [] }
        throw error("expected a mapping of \(what), found \(kindDescription)")
    }
}
