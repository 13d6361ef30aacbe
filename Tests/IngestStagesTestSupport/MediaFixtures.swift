import Foundation
import Testing

@testable import IngestCore
@testable import IngestCoreTestSupport
@testable import IngestStages
@testable import IngestTestSupport

/// A `TemporaryFolder` with the tools of one audio/video test: fixtures made with the ffmpeg CLI, results read back
/// with ffprobe (the oracle) and by walking the top-level MP4 boxes. The folder goes when the test drops this.
final class MediaFolder {
    let folder: TemporaryFolder
    var path: String { folder.path }

    init(_ label: String) throws { folder = try TemporaryFolder(label) }

    deinit { folder.remove() }

    func file(_ name: String) -> String { path + "/" + name }
    var workDirectory: String { file("work") }

    /// Runs a shell command; fails the test (with its stderr) when it does not succeed.
    func sh(_ script: String) throws {
        let result = try runCommand("/bin/sh", ["-c", script])
        try #require(result.status == 0, "\(script): \(result.stderr)")
    }

    /// `ffmpeg -v error -y ARGS` in this folder.
    func ffmpeg(_ arguments: String) throws { try sh("cd '\(path)' && ffmpeg -nostdin -v error -y \(arguments)") }

    /// ffprobe's JSON for `path` with packet counts.
    func probe(_ file: String) throws -> (format: [String: Any], streams: [[String: Any]]) {
        let result = try runTool(
            "ffprobe", ["-v", "error", "-count_packets", "-show_format", "-show_streams", "-of", "json", file])
        try #require(result.status == 0, "ffprobe \(file): \(result.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        return (json["format"] as? [String: Any] ?? [:], json["streams"] as? [[String: Any]] ?? [])
    }

    func stream(_ file: String, _ type: String) throws -> [String: Any]? {
        try probe(file).streams.first { $0["codec_type"] as? String == type }
    }

    func duration(_ file: String) throws -> Double {
        try #require(Double(try probe(file).format["duration"] as? String ?? ""))
    }

    /// Rotation of the first video stream as ffprobe reports it (display matrix side data); 0 when none.
    func rotation(_ file: String) throws -> Double {
        let video = try #require(try stream(file, "video"))
        let sideData = video["side_data_list"] as? [[String: Any]] ?? []
        for entry in sideData { if let rotation = entry["rotation"] as? Double { return rotation } }
        for entry in sideData { if let rotation = entry["rotation"] as? Int { return Double(rotation) } }
        return 0
    }

    /// Top-level box types in order (size + type headers only).
    func atoms(_ file: String) throws -> [String] {
        let handle = try #require(FileHandle(forReadingAtPath: file))
        defer { try? handle.close() }
        let end = try handle.seekToEnd()
        var offset: UInt64 = 0
        var types: [String] = []
        while offset + 8 <= end {
            try handle.seek(toOffset: offset)
            let header = [UInt8](try #require(try handle.read(upToCount: 16)))
            var size = header[0..<4].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            types.append(String(decoding: header[4..<8], as: UTF8.self))
            if size == 1 { size = header[8..<16].reduce(UInt64(0)) { $0 << 8 | UInt64($1) } }
            if size == 0 { size = end - offset }
            try #require(size >= 8)
            if size >= end - offset { break }
            offset += size
        }
        return types
    }

    func moovBeforeMdat(_ file: String) throws -> Bool {
        let types = try atoms(file)
        let moov = try #require(types.firstIndex(of: "moov"), "\(types)")
        let mdat = try #require(types.firstIndex(of: "mdat"), "\(types)")
        return moov < mdat
    }

    /// Every regular file under the work directory (a failed transcode must leave none, temp files included), but
    /// the marker ingest puts in a work folder it created.
    func filesInWork() -> [String] {
        guard let enumerator = FileManager.default.enumerator(atPath: workDirectory) else { return [] }
        return enumerator.compactMap { $0 as? String }.filter {
            guard $0 != WorkFolder.marker else { return false }
            var isDirectory: ObjCBool = false
            _ = FileManager.default.fileExists(atPath: workDirectory + "/" + $0, isDirectory: &isDirectory)
            return !isDirectory.boolValue
        }
    }

    func item(_ file: String) -> Item {
        return Item.onDisk(file)
    }

    /// Runs `stage` on `file`; returns the item and the stage's fact.
    func run<S: Stage>(_ stage: S, _ file: String) throws -> (item: Item, fact: [String: JSONValue]) {
        let item = item(file)
        let context = StageContext(settings: RunSettings(workDirectory: workDirectory, environment: [:]))
        _ = try stage.run(item, context: context)
        guard case .object(let fact)? = item.facts[S.name] else {
            Issue.record("no \(S.name) fact")
            return (item, [:])
        }
        return (item, Dictionary(uniqueKeysWithValues: fact.pairs.map { ($0.0, $0.1) }))
    }

    /// Runs `stage` expecting `ItemFailed`; returns the first failure.
    func failure<S: Stage>(_ stage: S, _ file: String) throws -> RuleFailure? {
        do {
            _ = try run(stage, file)
        } catch let failed as ItemFailed {
            return failed.failures.first
        }
        Issue.record("\(file) should have failed the \(S.name) stage")
        return nil
    }

    /// Overwrites `count` bytes at `fraction` of the file with a fixed pseudo-random pattern (damage mid-stream).
    func corrupt(_ file: String, at fraction: Double, count: Int) throws {
        let handle = try #require(FileHandle(forUpdatingAtPath: file))
        defer { try? handle.close() }
        let size = try handle.seekToEnd()
        try handle.seek(toOffset: UInt64(Double(size) * fraction))
        var state: UInt32 = 12345
        let bytes = (0..<count).map { _ -> UInt8 in
            state = state &* 1_103_515_245 &+ 12345
            return UInt8(truncatingIfNeeded: state >> 16)
        }
        try handle.write(contentsOf: Data(bytes))
    }

    /// Replaces the first `old` four-character code after the `stsd` box with `new` (an unknown codec).
    func patchSampleEntry(_ file: String, _ old: String, _ new: String) throws {
        try sh(
            """
            python3 -c "import sys
            d=open(sys.argv[1],'rb').read(); s=d.find(b'stsd'); i=d.find(b'\(old)',s)
            assert s>=0 and i>=0
            open(sys.argv[1],'wb').write(d[:i]+b'\(new)'+d[i+4:])" '\(file)'
            """)
    }
}
