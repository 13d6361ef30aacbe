import ArgumentParser
import IngestRun

/// `--report-format` and `report --format` take the enum itself: the parser names the valid values in its error,
/// and generated shell completions offer them (`ingest --generate-completion-script bash`).
extension ReportFormat: ExpressibleByArgument {}
