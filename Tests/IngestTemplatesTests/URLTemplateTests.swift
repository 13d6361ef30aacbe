import Foundation
import Testing

@testable import IngestCore
@testable import IngestTemplates

/// `Template.renderURL`: each value percent-encoded for where it stands in the URL, read from the URL as rendered
/// so far; a whole URL, a base URL or a host kept as it is, and `| raw` for the rare value that must be.
@Suite struct URLTemplateTests {
    func scope(_ ticket: JSONObject = [:]) -> TemplateScope {
        let item = Item(path: "/data/in/pet 7/h#frag.mov", relativePath: "pet 7/h#frag.mov", size: 12)
        item.facts = ["ticket": .object(ticket)]
        return TemplateScope(
            item: item, context: StageContext(settings: RunSettings(environment: ["API": "https://api.test/v1"])),
            stage: "upload")
    }

    func url(_ source: String, _ ticket: JSONObject = [:]) throws -> String {
        try Template(source).renderURL(scope(ticket))
    }

    @Test func valuesAreEncodedForWhereTheyStand() throws {
        #expect(try url("https://h/b/{{file.name}}?sig=1") == "https://h/b/h%23frag.mov?sig=1")
        #expect(try url("https://h/b?name={{file.name}}&sig=1") == "https://h/b?name=h%23frag.mov&sig=1")
        #expect(try url("https://h/b?{{file.name}}=1") == "https://h/b?h%23frag.mov=1")
        #expect(try url("https://h/b#{{file.name}}") == "https://h/b#h%23frag.mov")
        // `/` in a path value stays a separator; in a query it is encoded.
        #expect(
            try url("https://h/b/{{file.path}}?p={{file.path}}")
                == "https://h/b/pet%207/h%23frag.mov?p=pet%207%2Fh%23frag.mov")
        let name = ["n": "q?x=1&X-Amz-Signature=evil+50% café.mov"] as JSONObject
        #expect(
            try url("https://h/{{ticket.n}}?a={{ticket.n}}", name)
                == "https://h/q%3Fx%3D1%26X-Amz-Signature%3Devil%2B50%25%20caf%C3%A9.mov"
                + "?a=q%3Fx%3D1%26X-Amz-Signature%3Devil%2B50%25%20caf%C3%A9.mov")
        // A `.` or `..` segment from a value cannot climb the path.
        #expect(try url("https://h/b/{{ticket.p}}/x", ["p": "../a/./b"]) == "https://h/b/%2E%2E/a/%2E/b/x")
    }

    @Test func wholeURLsBaseURLsAndHostsAreKept() throws {
        let signed = "https://s3.test/b/k%20x.mov?X-Amz-Signature=ab%2Bc&X-Amz-Date=1"
        #expect(try url("{{ticket.upload_url}}", ["upload_url": .string(signed)]) == signed)
        // After a URL kept as it is, the next value is placed by that URL's text: here in its query.
        #expect(
            try url("{{ticket.u}}&name={{file.name}}", ["u": .string(signed)]) == signed + "&name=h%23frag.mov")
        #expect(try url("{{ticket.u}}/{{file.name}}", ["u": "https://h/b"]) == "https://h/b/h%23frag.mov")
        #expect(try url("{{env.API}}/x/{{file.name}}") == "https://api.test/v1/x/h%23frag.mov")
        #expect(
            try url("https://{{ticket.host}}/x/{{file.name}}", ["host": "h:8080"]) == "https://h:8080/x/h%23frag.mov")
        // A whole URL in a query value is a value like any other.
        #expect(
            try url("https://h/go?to={{ticket.u}}", ["u": "https://o/p?q=1"])
                == "https://h/go?to=https%3A%2F%2Fo%2Fp%3Fq%3D1")
    }

    @Test func rawKeepsTheTextAndIsAFilter() throws {
        #expect(
            try url("https://h/{{ticket.q | raw}}&z={{file.name}}", ["q": "a?x=1"]) == "https://h/a?x=1&z=h%23frag.mov")
        #expect(try Template("{{file.name | raw}}").render(scope()) == "h#frag.mov")
        #expect(throws: TemplateSyntaxError.self) { try Template("{{file.name | raw:1}}") }
    }
}
