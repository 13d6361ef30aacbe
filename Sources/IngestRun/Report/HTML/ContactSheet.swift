import Foundation
import IngestCore
import IngestMedia
import NativeFFmpeg

/// What the contact sheet shows for one file: a picture (a photo, or a video's representative frame with its
/// duration), an audio level strip, or why there is neither.
enum SheetPreview: Equatable {
    /// A JPEG thumbnail (at most `Thumbnail.maxSide` on its long side); `duration` for a video.
    case picture(jpeg: [UInt8], width: Int, height: Int, duration: Double?)
    /// Peaks 0…1 of equal slices of an audio recording.
    case waveform(peaks: [Float], duration: Double?)
    /// No preview, and why (`not a photo, video or recording`, the decoder's message …).
    case none(String)
}

/// Makes each file's preview with the libraries the stages use (IngestNative's thumbnailers), by what the file's
/// bytes are rather than its name. A file that cannot be previewed gets `.none` with the reason: a broken file is
/// exactly the one a reviewer wants to see listed, so a preview never fails the report.
enum ContactSheet {
    static func preview(path: String) -> SheetPreview {
        let kind: ContentKind
        do {
            kind = try Sniffer.sniff(path: path)
        } catch let error as ProbeError {
            return .none(error.message)
        } catch {
            return .none("\(error)")
        }
        do {
            switch kind {
            case .jpeg: return try picture(StillThumbnailer.jpeg(path: path))
            case .png: return try picture(StillThumbnailer.png(path: path))
            case .heif: return try picture(StillThumbnailer.heif(path: path))
            case .quicktime, .mp4, .matroska, .webm, .gif, .webp:
                guard let demuxer = Prober.demuxer(for: kind) else {
                    return .none("no demuxer for \(kind.displayName)")
                }
                // An .mp4/.mov holding only sound (a voice memo saved as .mp4) gets the level strip.
                do {
                    let video = try VideoThumbnailer.thumbnail(path: path, demuxer: demuxer)
                    return try picture(video.thumbnail, duration: video.duration)
                } catch let error as StillThumbnailer.Failure where error.description == "no video stream" {
                    return try waveform(path: path, demuxer: demuxer)
                }
            case .m4a, .wav, .mp3, .aac, .flac, .ogg:
                guard let demuxer = Prober.demuxer(for: kind) else {
                    return .none("no demuxer for \(kind.displayName)")
                }
                return try waveform(path: path, demuxer: demuxer)
            case .empty: return .none("empty file")
            default: return .none("no preview for \(kind.displayName)")
            }
        } catch let error as MediaInputError {
            return .none(error.description)
        } catch {
            return .none(String(describing: error))
        }
    }

    private static func picture(_ thumbnail: Thumbnail, duration: Double? = nil) throws -> SheetPreview {
        .picture(jpeg: try thumbnail.jpeg(), width: thumbnail.width, height: thumbnail.height, duration: duration)
    }

    private static func waveform(path: String, demuxer: Demuxer) throws -> SheetPreview {
        let result = try AudioWaveform.peaks(path: path, demuxer: demuxer)
        return .waveform(peaks: result.peaks, duration: result.duration)
    }
}
