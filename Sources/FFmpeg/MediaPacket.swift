import CFFmpeg

/// One compressed packet read from a container (`AVPacket`), reused read after read.
public final class MediaPacket {
    let packet: UnsafeMutablePointer<AVPacket>

    public init() {
        guard let packet = av_packet_alloc() else { fatalError("av_packet_alloc: out of memory") }
        self.packet = packet
    }

    deinit {
        var p: UnsafeMutablePointer<AVPacket>? = packet
        av_packet_free(&p)
    }

    /// The index of the stream the packet belongs to.
    public var streamIndex: Int { Int(packet.pointee.stream_index) }

    /// The packet carries encryption information (common encryption, as DRM-protected MP4
    /// files do): its payload is ciphertext, which no decoder can turn into audio.
    public var isEncrypted: Bool {
        var size = 0
        return av_packet_get_side_data(packet, AV_PKT_DATA_ENCRYPTION_INFO, &size) != nil
    }

    /// Where the packet's audio ends, in its stream's time base (its timestamp plus its
    /// duration); nil when it carries no timestamp.
    public var end: Int64? {
        let pts = packet.pointee.pts
        guard pts != Int64.min else { return nil }
        return pts + max(0, packet.pointee.duration)
    }

    /// Drops the payload so that the next read can reuse the packet.
    func clear() { av_packet_unref(packet) }
}
