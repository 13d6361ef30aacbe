// The one library product: an embedder imports `Ingest` and gets the layers below it.
@_exported import IngestCheck
@_exported import IngestConfig
@_exported import IngestCore
@_exported import IngestFiles
@_exported import IngestJournal
@_exported import IngestMedia
@_exported import IngestNetwork
@_exported import IngestRun
@_exported import IngestStages
@_exported import IngestTemplates
