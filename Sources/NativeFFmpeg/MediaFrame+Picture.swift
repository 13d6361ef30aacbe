internal import CFFmpeg

extension MediaFrame {
    /// Makes this frame another reference to `frame`'s buffers (`av_frame_ref`): one decoded picture held without
    /// copying it, whatever the decoder does with its own frame next.
    package func keep(_ frame: MediaFrame) throws {
        av_frame_unref(pointer)
        let result = av_frame_ref(pointer, frame.pointer)
        if result < 0 { throw FFmpegError(call: "av_frame_ref", code: FFmpegErrorCode(rawValue: result)) }
    }

    /// True when the frame holds a picture (after `keep`, or as decoded).
    package var hasPicture: Bool { pointer.pointee.data.0 != nil && pointer.pointee.width > 0 }

    /// Width, height and pixel format of a decoded picture: a change means a new scaler.
    package var pictureGeometry: (width: Int32, height: Int32, format: Int32) {
        (pointer.pointee.width, pointer.pointee.height, pointer.pointee.format)
    }

    /// The picture's size as shown: non-square pixels (anamorphic DV) at their display aspect.
    package var displaySize: (width: Int, height: Int) {
        let source = pointer.pointee
        let aspect = source.sample_aspect_ratio
        let width =
            aspect.num > 0 && aspect.den > 0
            ? Int(Double(source.width) * Double(aspect.num) / Double(aspect.den))
            : Int(source.width)
        return (width, Int(source.height))
    }
}
