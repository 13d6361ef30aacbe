import Foundation
import Testing

@testable import Ingest
@testable import IngestConfig
@testable import IngestCore
@testable import IngestStages
@testable import IngestTemplates

/// Templates: typed values, missing variables named, keys sanitised, form bodies exact.
@Suite struct TemplateTests {
    func scope(_ facts: JSONObject = [:]) -> TemplateScope {
        let item = Item(path: "/data/in/pet-7/visit one.m4a", relativePath: "pet-7/visit one.m4a", size: 12)
        item.facts = facts
        return TemplateScope(
            item: item, context: StageContext(settings: RunSettings(environment: ["API": "https://api.test"])),
            stage: "request")
    }

    @Test func soleVariablesKeepTheirType() throws {
        let facts: JSONObject = ["ticket": ["visit_id": "v-1", "n": 3, "fields": ["key": "a/b", "policy": "p"]]]
        let yaml = """
            version: 1
            name: t
            stages:
              - request: { url: "${API}/t", as: ticket }
              - request:
                  url: "${API}/x"
                  json: { n: "{{ticket.n}}", id: "{{ticket.visit_id}}", fields: "{{ticket.fields}}", text: "n={{ticket.n}}",
                          plain: 5, flag: true, none: null, quoted: "5", list: ["{{file.name}}", 1.5] }
                  as: out

            """
        let pipeline = try Pipeline.parse(yaml: yaml, environment: ["API": "https://api.test"])
        let stage = try #require(pipeline.stages.last?.stage as? RequestStage)
        let body = try #require(stage.options.json).render(scope(facts))
        #expect(
            body.serialized()
                == #"{"n":3,"id":"v-1","fields":{"key":"a/b","policy":"p"},"text":"n=3","plain":5,"flag":true,"none":null,"quoted":"5","list":["visit one.m4a",1.5]}"#
        )
    }

    @Test func builtInsAndMissingValues() throws {
        let scope = self.scope()
        #expect(
            try Template("{{file.stem}}|{{file.ext}}|{{file.path}}|{{dir.name}}|{{env.API}}").render(scope)
                == "visit one|m4a|pet-7/visit one.m4a|pet-7|https://api.test")
        let uuid = try Template("{{uuid}}").render(scope)
        #expect(try Template("{{uuid}}").render(scope) == uuid)
        #expect(UUID(uuidString: uuid) != nil)
        #expect(try Template("{{date.yyyyMMdd}}").render(scope).count == 8)
        #expect(throws: ItemFailed.self) { try Template("{{ticket.visit_id}}").render(scope) }
        do {
            _ = try Template("{{env.NOPE}}").render(scope)
        } catch let failed as ItemFailed {
            #expect(
                failed.failures.first?.message == "{{env.NOPE}} has no value: environment variable 'NOPE' is not set")
        }
        #expect(throws: TemplateSyntaxError.self) { try Template("{{ unclosed") }
        #expect(throws: TemplateSyntaxError.self) { try Template("{{a..b}}") }
    }

    @Test func keysAreSanitised() throws {
        let scope = self.scope()
        #expect(try scope.sanitizedKey("/a//b/./c\u{7}d.mov") == "a/b/c_d.mov")
        #expect(throws: ItemFailed.self) { try scope.sanitizedKey("a/../../etc/passwd") }
        #expect(throws: ItemFailed.self) { try scope.sanitizedKey("//") }
    }

    @Test func multipartFormIsExact() {
        let form = MultipartForm(
            fields: [("key", "k/${filename}"), ("policy", "cA==")], fileName: "a\"b.m4a", fileType: "audio/m4a")
        let b = form.boundary
        let head = String(decoding: form.head, as: UTF8.self)
        #expect(
            head == "--\(b)\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\nk/${filename}\r\n"
                + "--\(b)\r\nContent-Disposition: form-data; name=\"policy\"\r\n\r\ncA==\r\n"
                + "--\(b)\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a%22b.m4a\"\r\n"
                + "Content-Type: audio/m4a\r\n\r\n")
        #expect(String(decoding: form.tail, as: UTF8.self) == "\r\n--\(b)--\r\n")
    }

    @Test func jsonParserKeepsOrder() throws {
        let value = try JSONValue.parse(#"{"z": 1, "a": [true, null, 2.5, "\u00e9\n"], "m": {"y": -3}}"#)
        #expect(value.serialized() == #"{"z":1,"a":[true,null,2.5,"é\n"],"m":{"y":-3}}"#)
        #expect(throws: JSONParseError.self) { try JSONValue.parse("{\"a\": }") }
        #expect(throws: JSONParseError.self) { try JSONValue.parse(String(repeating: "[", count: 500)) }
    }
}
