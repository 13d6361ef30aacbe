enum IngestNativePlaceholder {}
