internal import CCurl
import Foundation

/// How a finished transfer reads: the server's answer when one arrived — also when curl reports an error after it
/// (an HTTP/2 stream the server ended before taking the whole body: curl's "not closed cleanly", error 18/92) — else
/// the error, with the phase of the attempt it stopped in when it was a timeout.
extension HTTPTransfer {
    func outcome(for code: CURLcode) -> Result<HTTPResponse, HTTPError> {
        let sent = reader == nil ? 0 : easy.offset(CURLINFO_SIZE_UPLOAD_T)
        if code != CURLE_OK {
            if let problem = reader?.problem { return .failure(.body(problem)) }
            if Int32(code.rawValue) == CurlError.abortedByCallback, isCancelled { return .failure(.cancelled) }
            guard answerArrived(code, sent: sent) else { return .failure(.curl(withPhase(easy.error(for: code)))) }
        }
        let status = easy.long(CURLINFO_RESPONSE_CODE)
        if let length = reader?.body.length, sent != length, (200..<300).contains(status) {
            // curl ends a transfer without error when a 2xx answer arrives before the body is out; only the count of
            // bytes sent tells a delivered upload from one the server stopped reading. (An error status before the
            // end is the server's refusal and is left to the caller.)
            return .failure(.incomplete(status: status, sent: sent, length: length))
        }
        return .success(
            HTTPResponse(
                status: status, headers: responseHeaders, body: responseBody, truncated: truncated,
                effectiveURL: easy.string(CURLINFO_EFFECTIVE_URL), bytesSent: sent))
    }

    /// Whether a final answer arrived before curl's error `code`: its headers ended, and either its body was cut by
    /// our own cap, or it came before the request body was all sent (the server answered early: its status is its
    /// decision, and a 2xx is a partial delivery), or its body is all there by its Content-Length.
    private func answerArrived(_ code: CURLcode, sent: Int64) -> Bool {
        guard answered else { return false }
        if code == CURLE_WRITE_ERROR { return truncated }
        if let length = reader?.body.length, sent < length { return true }
        let expected = easy.offset(CURLINFO_CONTENT_LENGTH_DOWNLOAD_T)
        return expected >= 0 && easy.offset(CURLINFO_SIZE_DOWNLOAD_T) >= expected
    }

    /// A timeout's text with the phase it ended: connecting, sending the body, waiting for the answer, or
    /// receiving it — and how far each had come.
    private func withPhase(_ error: CurlError) -> CurlError {
        guard error.code == CurlError.timedOut else { return error }
        var error = error
        error.text += " (\(phase))"
        return error
    }

    private var phase: String {
        let sent = reader == nil ? 0 : easy.offset(CURLINFO_SIZE_UPLOAD_T)
        let length = reader?.body.length ?? 0
        if answered || headerStatus >= 200 {
            let received = easy.offset(CURLINFO_SIZE_DOWNLOAD_T)
            let expected = easy.offset(CURLINFO_CONTENT_LENGTH_DOWNLOAD_T)
            let of = expected >= 0 ? " of \(HTTPError.grouped(expected))" : ""
            return "receiving the answer: status \(headerStatus), \(HTTPError.grouped(received))\(of) bytes in"
        }
        if easy.offset(CURLINFO_PRETRANSFER_TIME_T) == 0 { return "connecting" }
        if sent < length {
            return "sending the body: \(HTTPError.grouped(sent)) of \(HTTPError.grouped(length)) bytes sent"
        }
        return reader == nil
            ? "waiting for the answer" : "waiting for the answer after all \(HTTPError.grouped(length)) bytes were sent"
    }
}
