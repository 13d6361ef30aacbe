/// One choice of a mapping whose choosing key picks the spec that reads the rest of its keys (`upload`'s `method:`
/// picks a method's options). Its options are a `StageOptions` of their own, so their fields are their one spec:
/// decoding, the docs reference and the JSON Schema read them, and a key that belongs to another choice is refused
/// from the specs, naming the choices that take it.
package struct OptionVariant<Value>: Sendable {
    /// The choosing key's value that picks this variant (`s3`).
    package let tag: String
    /// What the variant does, a few words for the choosing key's doc.
    package let summary: String
    package let fieldDocs: [OptionDoc]
    /// Each field's JSON Schema (its description included), by name.
    package let fieldSchemas: JSONObject
    /// Decodes the variant's part of the mapping (`split`) through its spec; nil when it has errors.
    package let decode: @Sendable (ConfigNode, inout [PipelineFileError]) -> Value?

    /// `make` turns the decoded options into the variant's value (for `upload`: a maker of the method).
    package init<VariantOptions: StageOptions & Sendable>(
        _ tag: String, _ options: VariantOptions.Type, summary: String, make: @escaping @Sendable (VariantOptions) -> Value
    ) {
        self.tag = tag
        self.summary = summary
        fieldDocs = VariantOptions.fieldDocs
        var schemas = JSONObject()
        for field in VariantOptions.fields { schemas[field.name] = field.schema }
        fieldSchemas = schemas
        decode = { node, errors in
            let before = errors.count
            let options = VariantOptions(from: node, level: .options, errors: &errors)
            return errors.count == before ? make(options) : nil
        }
    }

    package var fieldNames: [String] { fieldDocs.map(\.name) }
    var requiredNames: [String] { fieldDocs.filter(\.required).map(\.name) }
}

/// The variants one key chooses among (the first is the default), and how a mapping is shared out between the
/// common spec (which holds the choosing key) and the chosen variant's.
package struct OptionVariants<Value>: Sendable {
    /// The choosing key (`method`).
    package let key: String
    package let all: [OptionVariant<Value>]

    package init(key: String, _ all: [OptionVariant<Value>]) {
        precondition(!all.isEmpty, "OptionVariants needs at least one variant")
        self.key = key
        self.all = all
    }

    package var defaultTag: String { all[0].tag }
    package var tags: [String] { all.map(\.tag) }

    /// The choosing key's field, for the common spec: one of the tags, documented from the variants' summaries.
    package func tagField<Root>(_ path: WritableKeyPath<Root, String>) -> OptionField<Root> {
        let tags = tags
        let described = all.map { "`\($0.tag)` (\($0.summary))" }
        return OptionField(
            name: key, doc: Self.listed(described, last: " or ") + ".", required: false, defaultText: defaultTag,
            valueSchema: ["type": "string", "enum": .array(tags.map { .string($0) })],
            decode: { root, node in root[keyPath: path] = try node.word(in: tags) })
    }

    /// Shares out a mapping: the keys `common` names (the choosing key among them) stay in the first node, for the
    /// common spec; the others go to the variant the choosing key names, in a node of their own at the same place.
    /// A key the chosen variant does not take is an error naming the variants that do (from their specs), else an
    /// unknown option; a key the variant requires and the mapping lacks is an error too. The first such error is
    /// reported (as for any options) and no variant is returned. No variant either when the choosing key names
    /// none: the common spec, decoding the key, says why.
    package func split(_ node: ConfigNode, common: [String], errors: inout [PipelineFileError])
        -> (common: ConfigNode, chosen: (variant: OptionVariant<Value>, node: ConfigNode)?)
    {
        guard case .mapping(let pairs) = node.kind else {
            // Null (`- upload:`) is the default variant with nothing given; anything else the common spec refuses.
            let empty = ConfigNode(.mapping([]), at: node.location)
            return (node, node.isNull ? check(all[0], empty, errors: &errors) : nil)
        }
        let isCommon = { (pair: (key: ConfigNode, value: ConfigNode)) in common.contains(pair.key.scalar ?? "") }
        let commonNode = ConfigNode(.mapping(pairs.filter(isCommon)), at: node.location)
        // A choosing key given as a list or a mapping names no variant (not the default one): the common spec says
        // what it is.
        let given = pairs.first { $0.key.scalar == key }?.value
        guard let tag = given == nil ? defaultTag : given?.scalar, let variant = all.first(where: { $0.tag == tag })
        else { return (commonNode, nil) }
        let own = ConfigNode(.mapping(pairs.filter { !isCommon($0) }), at: node.location)
        return (commonNode, check(variant, own, common: common, errors: &errors))
    }

    /// The variant and its node when every key is the variant's and none it requires is missing.
    private func check(
        _ variant: OptionVariant<Value>, _ node: ConfigNode, common: [String] = [],
        errors: inout [PipelineFileError]
    ) -> (variant: OptionVariant<Value>, node: ConfigNode)? {
        let pairs: [(key: ConfigNode, value: ConfigNode)]
        if case .mapping(let found) = node.kind { pairs = found } else { pairs = [] }
        for (name, _) in pairs {
            let text = name.scalar ?? ""
            guard !variant.fieldNames.contains(text) else { continue }
            let takers = all.filter { $0.fieldNames.contains(text) }.map(\.tag)
            if takers.isEmpty {
                errors.append(OptionsLevel.options.unknown(name, known: common + variant.fieldNames))
            } else {
                let which = takers.count == 1 ? "\(key) \(takers[0]) takes" : "\(key)s \(Self.listed(takers)) take"
                errors.append(name.error("'\(text)' is not used by \(key) \(variant.tag); only \(which) it"))
            }
            return nil
        }
        let given = Set(pairs.compactMap(\.key.scalar))
        if let missing = variant.requiredNames.first(where: { !given.contains($0) }) {
            errors.append(node.error("\(key) \(variant.tag) needs '\(missing)'"))
            return nil
        }
        return (variant, node)
    }

    /// `a`, `a and b`, `a, b and c`.
    static func listed(_ names: [String], last: String = " and ") -> String {
        names.count < 2 ? names.joined() : names.dropLast().joined(separator: ", ") + last + names[names.count - 1]
    }
}

// MARK: - Docs and schema

extension OptionVariants {
    /// Every variant's fields once, in the order they first appear: a field's doc and default say which variants
    /// take it (`s3: the bucket …`; `put, s3-post: …; tus: …` where their docs differ).
    package var mergedFieldDocs: [OptionDoc] {
        mergedFieldNames.map { name in
            let takers = all.compactMap { variant in
                variant.fieldDocs.first { $0.name == name }.map { (tag: variant.tag, doc: $0) }
            }
            let doc = said(takers.map { ($0.tag, $0.doc.doc) }, prefixed: true)
            let defaults = takers.map { ($0.tag, $0.doc.required ? "required" : $0.doc.defaultText ?? "none") }
            let defaultText =
                takers.allSatisfy { $0.doc.defaultText == nil && !$0.doc.required }
                ? nil : said(defaults, period: false)
            return OptionDoc(
                name: name, doc: doc, required: false, defaultText: defaultText, schema: takers[0].doc.schema)
        }
    }

    /// The variants that say the same thing grouped, in the variants' order: `put, s3-post: text; tus: other.`.
    /// One text for all is said as it is, unless `prefixed` (a doc says which variants take the field).
    private func said(_ texts: [(tag: String, text: String)], prefixed: Bool = false, period: Bool = true) -> String {
        var groups: [(tags: [String], text: String)] = []
        for (tag, text) in texts {
            if let index = groups.firstIndex(where: { $0.text == text }) {
                groups[index].tags.append(tag)
            } else {
                groups.append(([tag], text))
            }
        }
        if groups.count == 1, !prefixed || groups[0].tags.count == all.count { return groups[0].text }
        let parts = groups.map { group in
            let text = group.text.hasSuffix(".") ? String(group.text.dropLast()) : group.text
            return "\(naming(group.tags)): \(text)"
        }
        return parts.joined(separator: "; ")
            + (period && (groups.count > 1 || groups[0].text.hasSuffix(".")) ? "." : "")
    }

    /// Every variant's field names once, each variant's order kept (a field comes after those its variants list
    /// before it); where that leaves a choice, the earlier variant's field first. So fields every variant ends with
    /// (the network options) end the list, and a variant's own fields stay together.
    private var mergedFieldNames: [String] {
        var before: [String: Set<String>] = [:]
        var rank: [String: (Int, Int)] = [:]
        for (index, variant) in all.enumerated() {
            for (position, name) in variant.fieldNames.enumerated() {
                if rank[name] == nil { rank[name] = (index, position) }
                before[name, default: []].formUnion(variant.fieldNames[..<position])
            }
        }
        var merged: [String] = []
        while merged.count < rank.count {
            let ready = rank.keys.filter { name in
                !merged.contains(name) && before[name, default: []].allSatisfy(merged.contains)
            }
            // A cycle (two variants listing fields in opposite orders) is broken by rank.
            let pool = ready.isEmpty ? rank.keys.filter { !merged.contains($0) } : ready
            merged.append(pool.min { rank[$0]! < rank[$1]! }!)
        }
        return merged
    }

    /// `s3`, `put, s3-post`, or `every method but local` when that is shorter.
    private func naming(_ tags: [String]) -> String {
        let others = self.tags.filter { !tags.contains($0) }
        guard tags.count > 2, others.count < tags.count else { return tags.joined(separator: ", ") }
        return "every \(key) but \(Self.listed(others))"
    }

    /// The mapping's JSON Schema: the common fields and every variant's (so an editor completes them all, each
    /// described with the variants that take it), then per variant an `if` on the choosing key whose `then` requires
    /// what the variant requires and refuses the keys it does not take.
    package func jsonSchema(common: JSONObject, required: [String] = []) -> JSONValue {
        var properties = common
        for doc in mergedFieldDocs where properties[doc.name] == nil {
            guard let schema = all.lazy.compactMap({ $0.fieldSchemas[doc.name] }).first else { continue }
            properties[doc.name] = Self.described(schema, by: doc)
        }
        let rules: [JSONValue] = all.map { variant in
            var condition: JSONObject = ["properties": [key: ["const": .string(variant.tag)]]]
            if variant.tag != defaultTag { condition["required"] = [.string(key)] }
            var refused = JSONObject()
            for (name, _) in properties.pairs where !common.keys.contains(name) && !variant.fieldNames.contains(name) {
                refused[name] = false
            }
            var then: JSONObject = ["properties": .object(refused)]
            if !variant.requiredNames.isEmpty { then["required"] = .array(variant.requiredNames.map { .string($0) }) }
            return ["if": .object(condition), "then": .object(then)]
        }
        var schema: JSONObject = [
            "type": "object", "additionalProperties": false, "properties": .object(properties), "allOf": .array(rules),
        ]
        if !required.isEmpty { schema["required"] = .array(required.map { .string($0) }) }
        return .object(schema)
    }

    /// A field's schema with the merged description (which names the variants that take it).
    private static func described(_ schema: JSONValue, by doc: OptionDoc) -> JSONValue {
        guard case .object(let object) = schema else { return schema }
        var result: JSONObject = [
            "description": .string(doc.defaultText.map { "\(doc.doc) Default: \($0)." } ?? doc.doc)
        ]
        for (key, value) in object.pairs where key != "description" { result[key] = value }
        return .object(result)
    }
}

extension ConfigNode {
    /// The scalar's text when it is one of `words`, else an error listing them (with the closest as a suggestion).
    package func word(in words: [String]) throws -> String {
        let text = try String(from: self)
        guard words.contains(text) else {
            throw error(
                "\(ConfigNode.echo(text)) is not one of: \(words.joined(separator: ", "))",
                suggestion: closestMatch(to: text, in: words))
        }
        return text
    }
}
