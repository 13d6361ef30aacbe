import ArgumentParser
import Foundation
import IngestCore
import IngestNetwork

/// `ingest presign put|post s3://BUCKET/KEY`: hand out an upload URL or form signed with the caller's AWS
/// credentials, e.g. to test a pipeline against a bucket without the backend that normally issues tickets.
struct PresignCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "presign",
        abstract: "Print a presigned S3 upload: a PUT URL or a POST form (credentials from the AWS_* variables).",
        discussion: """
            Credentials come from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and, for temporary credentials, \
            AWS_SESSION_TOKEN; the region from --region or AWS_REGION. Signing is local: nothing is sent. \
            Missing credentials or region exit with 2.
            """,
        subcommands: [PresignPutCommand.self, PresignPostCommand.self]
    )
}

/// Options both forms share.
struct PresignOptions: ParsableArguments {
    @Argument(help: ArgumentHelp("Where the object goes.", valueName: "s3://BUCKET/KEY"))
    var location: String

    @Option(
        name: .long, parsing: .unconditional,
        help: ArgumentHelp("Seconds the upload stays valid (1 to 604800; default: 3600).", valueName: "seconds"),
        transform: {
            try CLINumber.whole($0, "--expires", Int.min...Int.max, rule: "1 to 604800 seconds (7 days)")
        })
    var expires: Int = 3600

    @Option(name: .long, help: ArgumentHelp("AWS region (default: AWS_REGION).", valueName: "region"))
    var region: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "S3-compatible server instead of AWS, as http(s)://host[:port].", valueName: "url"))
    var endpoint: String?

    @Flag(name: .long, help: "Put the bucket in the path (host/bucket/key) instead of the host name.")
    var pathStyle = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Content-Type the upload must send (it is signed: other types are refused).", valueName: "type"))
    var contentType: String?

    @Option(
        name: .long,
        help: ArgumentHelp("Signing time instead of now, for reproducible output.", valueName: "YYYYMMDDTHHMMSSZ"))
    var date: String?

    func validate() throws {
        if !S3Presigner.expiryRange.contains(expires) {
            throw ValidationError("--expires must be 1 to 604800 seconds (7 days), found \(expires)")
        }
        do {
            _ = try S3Location(parsing: location)
            if let date { _ = try SigV4Signer.date(fromTimestamp: date) }
            if let endpoint { _ = try S3Endpoint(region: "us-east-1", url: endpoint) }
        } catch let error as S3Error {
            throw ValidationError(error.description)
        }
    }

    /// Credentials, region and endpoint; a missing variable is a usage error (exit 2) that names it.
    func presigner() throws -> (S3Presigner, S3Location, Date) {
        let environment = ProcessInfo.processInfo.environment
        return try exiting(.usage, on: S3Error.self, saying: "ingest presign") {
            let credentials = try AWSCredentials.fromEnvironment(environment)
            let region = try region ?? AWSCredentials.region(from: environment)
            let endpoint = try S3Endpoint(region: region, url: endpoint, pathStyle: pathStyle)
            let signingDate = try date.map(SigV4Signer.date(fromTimestamp:)) ?? SystemClock().date
            return (
                S3Presigner(credentials: credentials, region: region, endpoint: endpoint),
                try S3Location(parsing: location), signingDate
            )
        }
    }
}

struct PresignPutCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "put",
        abstract: "Print a presigned PUT URL (upload with: curl -T FILE URL).")

    @OptionGroup var options: PresignOptions

    func validate() throws {
        if (try? S3Location(parsing: options.location))?.key.isEmpty == true {
            throw ValidationError("'\(options.location)' has no key: a PUT needs s3://BUCKET/KEY")
        }
    }

    func run() throws {
        let (presigner, location, date) = try options.presigner()
        let headers = options.contentType.map { [("Content-Type", $0)] } ?? []
        let url = try exiting(.usage, on: S3Error.self, saying: "ingest presign put") {
            try presigner.presignedURL(
                method: "PUT", location: location, expires: options.expires, headers: headers, date: date)
        }
        print(url)
    }
}

struct PresignPostCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "post",
        abstract: "Print a presigned POST form as one JSON line: {\"url\": …, \"fields\": {…}}.",
        discussion: """
            Send the fields in order, then the file last, as multipart/form-data to the url, e.g. \
            curl --form-string key=… --form-string policy=… … -F file=@FILE URL. With --starts-with and no key \
            after the bucket, the key field is PREFIX${filename}, which S3 fills in with the uploaded file's name.
            """)

    @OptionGroup var options: PresignOptions

    @Option(
        name: .long,
        help: ArgumentHelp("Smallest and largest file allowed, in bytes or with units (1,100MB).", valueName: "min,max")
    )
    var contentLengthRange: String?

    @Option(name: .long, help: ArgumentHelp("Allow any key starting with this prefix.", valueName: "prefix"))
    var startsWith: String?

    @Option(
        name: .long, parsing: .unconditional,
        help: ArgumentHelp("Status S3 answers a successful upload with: 200, 201 or 204.", valueName: "n"),
        transform: {
            try CLINumber.whole($0, "--success-action-status", Int.min...Int.max, rule: "200, 201 or 204")
        })
    var successActionStatus: Int?

    /// `MIN,MAX` with sizes such as `100MB`.
    static func parseRange(_ text: String) -> ClosedRange<Int64>? {
        let parts = text.split(separator: ",", omittingEmptySubsequences: false)
        guard parts.count == 2, let min = ByteSize.parse(String(parts[0])), let max = ByteSize.parse(String(parts[1])),
            min.bytes <= max.bytes, max <= ByteSize.maximum
        else { return nil }
        return min.bytes...max.bytes
    }

    func validate() throws {
        if let contentLengthRange, PresignPostCommand.parseRange(contentLengthRange) == nil {
            throw ValidationError(
                "--content-length-range must be MIN,MAX with MIN <= MAX (e.g. 1,104857600 or 1,100MB), "
                    + "found '\(contentLengthRange)'")
        }
        if let successActionStatus, ![200, 201, 204].contains(successActionStatus) {
            throw ValidationError("--success-action-status must be 200, 201 or 204, found \(successActionStatus)")
        }
        let key = (try? S3Location(parsing: options.location))?.key ?? ""
        if let startsWith {
            if !key.isEmpty && !key.hasPrefix(startsWith) {
                throw ValidationError("the key '\(key)' does not start with --starts-with '\(startsWith)'")
            }
        } else if key.isEmpty {
            throw ValidationError("'\(options.location)' has no key: give s3://BUCKET/KEY or --starts-with PREFIX")
        }
    }

    func run() throws {
        let (presigner, location, date) = try options.presigner()
        let key: S3Presigner.KeyRule =
            startsWith.map { .startsWith($0, keyField: location.key.isEmpty ? $0 + "${filename}" : location.key) }
            ?? .exactly(location.key)
        let post = try exiting(.usage, on: S3Error.self, saying: "ingest presign post") {
            try presigner.presignedPost(
                bucket: location.bucket, key: key, contentType: options.contentType.map { .exactly($0) },
                contentLengthRange: contentLengthRange.flatMap(PresignPostCommand.parseRange),
                successActionStatus: successActionStatus, expires: options.expires, date: date)
        }
        print(post.json.serialized())
    }
}
