import ArgumentParser
import Foundation
import IngestCheck
import IngestCore
import IngestRun

/// `ingest test`: runs pipelines' test files (`NAME.test.yml` beside `NAME.yml`) with their stubbed server answers;
/// nothing is sent. Exit 0 when every case passed, 1 when some failed, 2 when a test file or its pipeline is invalid.
struct TestCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "test",
        abstract: "Run pipelines' test files (NAME.test.yml): fixtures, stubbed server answers, expected outcomes.")

    @Argument(help: "Test files, or folders holding *.test.yml files (default: pipelines).")
    var paths: [String] = []

    @Option(name: .long, help: ArgumentHelp("Also write the results as JUnit XML to this file.", valueName: "file"))
    var junit: String?

    func run() throws {
        var files: [String] = []
        var invalid = false
        for path in paths.isEmpty ? ["pipelines"] : paths {
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) else {
                printError("ingest: \(path) does not exist")
                invalid = true
                continue
            }
            if !isFolder.boolValue {
                files.append(path)
                continue
            }
            let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
            files += names.filter { $0.hasSuffix(".test.yml") }.sorted().map {
                ($0 as NSString).isAbsolutePath ? $0 : (path as NSString).appendingPathComponent($0)
            }
        }
        if files.isEmpty && !invalid {
            printError(
                "ingest: no test files (*.test.yml) in \(paths.isEmpty ? "pipelines" : paths.joined(separator: ", "))")
            throw ExitStatus.usage
        }
        var suites: [(name: String, results: [PipelineTester.CaseResult])] = []
        for file in files {
            guard let results = runFile(file) else {
                invalid = true
                continue
            }
            suites.append(((file as NSString).lastPathComponent, results))
        }
        let all = suites.flatMap(\.results)
        let failed = all.filter { !$0.passed }.count
        print(
            "\(all.count) case(s): \(all.count - failed) passed, \(failed) failed"
                + (invalid ? "; some test files could not be run" : ""))
        if let junit { try writeJUnit(suites, to: junit) }
        throw invalid ? ExitStatus.usage : failed > 0 ? ExitStatus.ruleFailures : ExitStatus.success
    }

    /// Runs one file's cases and prints them; nil (after saying why) when the file or its pipeline is invalid.
    func runFile(_ file: String) -> [PipelineTester.CaseResult]? {
        let test: PipelineTestFile
        do {
            test = try PipelineTestFile.load(path: file)
        } catch let errors as PipelineFileErrors {
            for error in errors.errors { printError(error.description) }
            printError("\(file): \(errors.errors.count) error(s) in the test file")
            return nil
        } catch let error as PipelineFileError {
            printError("\(error)")
            return nil
        } catch {
            printError("\(file): \(error)")
            return nil
        }
        do {
            let results = try PipelineTester.run(test)
            print(file)
            for result in results {
                print("  \(result.passed ? "ok  " : "FAIL")  \(result.name)")
                for line in result.mismatches.flatMap({ $0.split(separator: "\n") }) { print("        \(line)") }
            }
            return results
        } catch let error as PipelineFileError {
            printError("\(error)")
        } catch let errors as PipelineFileErrors {
            for error in errors.errors { printError(error.description) }
            printError("\(file): its pipeline has \(errors.errors.count) error(s)")
        } catch {
            printError("\(file): \(error)")
        }
        return nil
    }

    func writeJUnit(_ suites: [(name: String, results: [PipelineTester.CaseResult])], to path: String) throws {
        func escaped(_ text: String) -> String {
            text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
                .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
        }
        var xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n"
        for suite in suites {
            let failures = suite.results.filter { !$0.passed }.count
            let time = suite.results.map(\.seconds).reduce(0, +)
            xml +=
                "  <testsuite name=\"\(escaped(suite.name))\" tests=\"\(suite.results.count)\" "
                + "failures=\"\(failures)\" time=\"\(String(format: "%.3f", time))\">\n"
            for result in suite.results {
                xml +=
                    "    <testcase classname=\"\(escaped(suite.name))\" name=\"\(escaped(result.name))\" "
                    + "time=\"\(String(format: "%.3f", result.seconds))\""
                if result.passed {
                    xml += "/>\n"
                } else {
                    let text = escaped(result.mismatches.joined(separator: "\n"))
                    xml +=
                        ">\n      <failure message=\"\(escaped(result.mismatches[0].split(separator: "\n")[0].description))\">"
                        + "\(text)</failure>\n    </testcase>\n"
                }
            }
            xml += "  </testsuite>\n"
        }
        xml += "</testsuites>\n"
        let output = try ReportOutput(path: path)
        try output.write(xml)
        try output.commit()
    }
}
