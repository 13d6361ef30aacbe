import IngestCore

/// Every upload method, by its `method:` value; the first is the default. A method is a folder beside this file
/// (its type and `Options`) plus its line here: decoding, the docs reference and the JSON Schema follow from it.
enum UploadMethods {
    static let all = OptionVariants<UploadMethodMaker>(
        key: "method",
        [
            .method(PutUpload.self),
            .method(S3PostUpload.self),
            .method(LocalUpload.self),
            .method(S3Upload.self),
            .method(TusUpload.self),
        ])
}
