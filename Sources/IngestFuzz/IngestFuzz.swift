import Foundation
import IngestFuzzing

#if INGEST_FUZZ
    /// The target this process fuzzes, from `INGEST_FUZZ_TARGET` (the Makefile sets it per run).
    let fuzzTarget: FuzzTarget = {
        let name = ProcessInfo.processInfo.environment["INGEST_FUZZ_TARGET"] ?? ""
        guard let target = FuzzTarget(rawValue: name) else {
            let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")
            FileHandle.standardError.write(Data("set INGEST_FUZZ_TARGET to one of: \(names)\n".utf8))
            exit(2)
        }
        return target
    }()

    /// libFuzzer's entry, called once per input.
    @_cdecl("LLVMFuzzerTestOneInput")
    public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
        fuzzTarget.run(data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? [])
        return 0
    }

    /// libFuzzer's driver (in the runtime -sanitize=fuzzer links), for executables whose `main` is not libFuzzer's.
    @_silgen_name("LLVMFuzzerRunDriver")
    func runFuzzerDriver(
        _ argc: UnsafeMutablePointer<CInt>,
        _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
        _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
    ) -> CInt

    /// SwiftPM links an executable with `main` aliased to `<module>_main`, so libFuzzer's own `main` is never
    /// pulled in; this is that entry, handing the command line to libFuzzer.
    @_cdecl("ingest_fuzz_main")
    public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
        var count = argc
        var arguments = argv
        return runFuzzerDriver(&count, &arguments, fuzzOneInput)
    }
#else
    /// Without the fuzzer: `ingest-fuzz TARGET FILE...` runs files through a target's entry, e.g. to reproduce a
    /// crash in a plain build.
    @main
    struct Replay {
        static func main() {
            let arguments = CommandLine.arguments.dropFirst()
            guard let name = arguments.first, let target = FuzzTarget(rawValue: name) else {
                let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: "|")
                print("usage: ingest-fuzz \(names) FILE...")
                exit(2)
            }
            for path in arguments.dropFirst() {
                guard let data = FileManager.default.contents(atPath: path) else {
                    print("\(path): cannot read")
                    exit(1)
                }
                target.run([UInt8](data))
                print("\(path): ok")
            }
        }
    }
#endif
