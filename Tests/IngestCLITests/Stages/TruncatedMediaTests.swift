import Foundation
import Testing

@testable import IngestCore
@testable import IngestCoreTestSupport
@testable import IngestMedia
@testable import IngestNetwork
@testable import IngestStages
@testable import IngestStagesTestSupport
@testable import IngestTestSupport

/// Copies cut short (a half-copied recording): `validate` fails every cut of an ISO-BMFF file, from 5 % to the last
/// byte, with its own rule and the bytes needed vs. had, while the untouched files pass. Made with the ffmpeg CLI.
@Suite(.serialized) struct TruncatedMediaTests {
    /// One 2 s clip per layout: index at the front (`+faststart`) or at the end, as MP4, MOV, M4A and 3GP.
    final class Media: @unchecked Sendable {
        static let shared = Media()
        let folder: MediaFolder?
        let error: String?

        static let video =
            "-f lavfi -i testsrc=size=160x120:rate=25:duration=2 -f lavfi -i sine=frequency=440:duration=2"
        static let h264 = "-c:v libx264 -preset ultrafast -pix_fmt yuv420p -c:a aac -shortest"
        static let audio = "-f lavfi -i sine=frequency=440:duration=2 -ac 1 -c:a aac"
        /// File name → ffmpeg arguments after the inputs.
        static let recipes: [(name: String, arguments: String)] = [
            ("fast.mp4", "\(video) \(h264) -movflags +faststart"),
            ("plain.mp4", "\(video) \(h264)"),
            ("fast.mov", "\(video) \(h264) -movflags +faststart"),
            ("plain.mov", "\(video) \(h264)"),
            ("fast.m4a", "\(audio) -movflags +faststart"),
            ("plain.m4a", "\(audio)"),
            ("fast.3gp", "\(video) \(h264) -movflags +faststart"),
        ]

        init() {
            do {
                let folder = try MediaFolder("truncated")
                for recipe in Self.recipes { try folder.ffmpeg("\(recipe.arguments) \(recipe.name)") }
                self.folder = folder
                error = nil
            } catch {
                folder = nil
                self.error = "\(error)"
            }
        }
    }

    static let cutPercents: [Double] = [5, 10, 25, 50, 75, 90, 99, 99.9]

    func media() throws -> MediaFolder {
        try #require(Media.shared.folder, "fixtures: \(Media.shared.error ?? "")")
    }

    /// The failures of a default `validate` (no rule that needs the container asked for) on `path`.
    func validate(_ path: String, _ configure: (inout ValidateStage.Options) -> Void = { _ in }) throws -> [RuleFailure]
    {
        var options = ValidateStage.Options()
        configure(&options)
        let stage = try ValidateStage(options: options)
        let item = Item.onDisk(path)
        do {
            _ = try stage.run(item, context: StageContext(settings: RunSettings()))
            return []
        } catch let failed as ItemFailed {
            return failed.failures
        }
    }

    /// Writes the first `length` bytes of `source` to a new file named after the cut; returns its path.
    func cut(_ source: String, to length: Int, in folder: MediaFolder) throws -> String {
        let handle = try #require(FileHandle(forReadingAtPath: source))
        let head = try handle.read(upToCount: length) ?? Data()
        try handle.close()
        let path = folder.file("cut-\(length)-" + (source as NSString).lastPathComponent)
        #expect(FileManager.default.createFile(atPath: path, contents: head))
        return path
    }

    func size(_ path: String) throws -> Int {
        try #require((try FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.intValue)
    }

    @Test(arguments: Media.recipes.map(\.name))
    func untouchedFilePasses(_ name: String) throws {
        let folder = try media()
        #expect(try validate(folder.file(name)) == [])
        #expect(try Prober.probe(path: folder.file(name), timeout: 10).truncation == nil)
    }

    @Test(arguments: Media.recipes.map(\.name))
    func everyCutFails(_ name: String) throws {
        let folder = try media()
        let source = folder.file(name)
        let full = try size(source)
        let faststart = name.hasPrefix("fast")
        if faststart { #expect(try folder.moovBeforeMdat(source)) }
        // Where the index is whole: after the moov box of a faststart file, nowhere in one whose moov is at the end.
        let indexWhole = faststart ? try #require(try boxEnd("moov", in: source)) : full + 1
        let lengths = Self.cutPercents.map { Int(Double(full) * $0 / 100) } + [full - 1]
        for length in lengths {
            let path = try cut(source, to: length, in: folder)
            let failures = try validate(path)
            let rules = failures.map(\.rule.rawValue)
            #expect(!rules.isEmpty, "\(name) cut to \(length) of \(full) bytes passed validate")
            // A cut through the index is FFmpeg's to refuse (moov atom not found: corrupt); past it the file opens.
            let allowed: Set<String> = length >= indexWhole ? ["truncated"] : ["truncated", "corrupt"]
            #expect(Set(rules).isSubset(of: allowed), "\(name) \(length) of \(full): \(rules)")
            if let truncated = failures.first(where: { $0.rule.rawValue == "truncated" }) {
                #expect(truncated.stage == "validate")
                #expect(truncated.message.hasPrefix("the file is cut short: its "), "\(truncated.message)")
                #expect(truncated.message.hasSuffix(", the file has \(Truncation.grouped(Int64(length)))"))
                #expect(truncated.actual == "\(length) bytes")
                let needed = try #require(Int(truncated.expected?.split(separator: " ").first ?? ""))
                #expect(needed > length && needed <= full, "\(name) \(length): needs \(needed)")
            }
        }
    }

    /// Cut exactly where the `mdat` box starts: no box claims too much (there is none), only the sample index
    /// reaches past the end.
    @Test func cutBeforeTheMediaDataIsFoundByTheIndex() throws {
        let folder = try media()
        let source = folder.file("fast.mp4")
        let mdat = try #require(try mdatOffset(source))
        let path = try cut(source, to: mdat, in: folder)
        #expect(ISOBoxes.overrun(path: path, size: Int64(mdat)) == nil)
        let failures = try validate(path)
        #expect(failures.map(\.rule.rawValue) == ["truncated"])
        #expect(failures.first?.message.contains("its media data needs") == true)
    }

    /// An `mdat` whose size field says 0 ("to the end of the file", as some recorders leave it): the boxes cannot
    /// tell a cut, the index still does.
    @Test func mdatRunningToTheEndIsCheckedByTheIndex() throws {
        let folder = try media()
        let source = folder.file("fast.mp4")
        let mdat = try #require(try mdatOffset(source))
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: source)))
        bytes.replaceSubrange(mdat..<mdat + 4, with: [0, 0, 0, 0])
        let open = folder.file("open-ended.mp4")
        try Data(bytes).write(to: URL(fileURLWithPath: open))
        #expect(try validate(open) == [])
        let path = try cut(open, to: bytes.count / 2, in: folder)
        #expect(ISOBoxes.overrun(path: path, size: Int64(bytes.count / 2)) == nil)
        #expect(try validate(path).map(\.rule.rawValue) == ["truncated"])
    }

    /// Every broken rule is reported: the cut beside the rules that read the container, which still read it.
    @Test func reportedBesideOtherRules() throws {
        let folder = try media()
        let path = try cut(folder.file("fast.mov"), to: try size(folder.file("fast.mov")) / 2, in: folder)
        let rules = try validate(path) {
            $0.extensions = ["mp4"]
            $0.duration = .init()
            $0.duration?.max = DurationValue(seconds: 10)
            $0.require = [.video, .audio]
        }.map(\.rule.rawValue)
        #expect(rules == ["extensions", "truncated"])
    }

    @Test func probeSaysHowManyBytesAreMissing() throws {
        let folder = try media()
        let source = folder.file("fast.m4a")
        let full = try size(source)
        let path = try cut(source, to: full - 100, in: folder)
        let probe = try Prober.probe(path: path, timeout: 10)
        let truncation = try #require(probe.truncation)
        #expect(truncation.neededBytes == Int64(full))
        #expect(truncation.missingBytes == 100)
        guard case .object(let format)? = probe.json["format"] else {
            Issue.record("no format object")
            return
        }
        #expect(format["missing_bytes"] == .int(100))
    }

    /// The CLI as a user meets it: the preflight pipeline fails the half-copied file, `ingest probe` still reads it
    /// but says it is cut short.
    @Test func commandLineSaysTheFileIsCutShort() throws {
        let folder = try media()
        let full = try size(folder.file("fast.mov"))
        let path = try cut(folder.file("fast.mov"), to: full / 2, in: folder)
        let validate = try runCommand(
            TestPaths.ingest, ["validate", "pipelines/preflight.yml", path], directory: TestPaths.root)
        #expect(validate.status == 1)
        #expect(
            validate.stdout.contains(
                "validate.truncated: the file is cut short: its media data needs \(Truncation.grouped(Int64(full))) bytes, "
                    + "the file has \(Truncation.grouped(Int64(full / 2)))"), "\(validate.stdout)")
        let probe = try runCommand(TestPaths.ingest, ["probe", path])
        #expect(probe.status == 0)
        #expect(probe.stdout.contains("(the file is cut short: its media data needs"), "\(probe.stdout)")
        let json = try runCommand(TestPaths.ingest, ["probe", "--json", path])
        #expect(json.stdout.contains("\"missing_bytes\":\(full - full / 2)"), "\(json.stdout)")
    }

    /// The `mdat` box's offset.
    func mdatOffset(_ path: String) throws -> Int? { try topLevelBox("mdat", in: path)?.offset }

    /// Where the top-level box `type` ends.
    func boxEnd(_ type: String, in path: String) throws -> Int? {
        try topLevelBox(type, in: path).map { $0.offset + $0.size }
    }

    /// The first top-level box of `type` (32-bit sizes: the fixtures are small).
    func topLevelBox(_ type: String, in path: String) throws -> (offset: Int, size: Int)? {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        var offset = 0
        while offset + 8 <= data.count {
            let size = data[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            if String(decoding: data[offset + 4..<offset + 8], as: UTF8.self) == type { return (offset, size) }
            guard size >= 8 else { return nil }
            offset += size
        }
        return nil
    }
}
