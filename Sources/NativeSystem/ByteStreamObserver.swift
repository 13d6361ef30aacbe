/// Sees a file's bytes as they stream past (a copy, an upload's body), and is told when the stream restarts from
/// byte 0 (a retried request): how hashing rides along without reading the file twice.
package protocol ByteStreamObserver: AnyObject {
    func restart()
    func consume(_ bytes: UnsafeRawBufferPointer)
}
