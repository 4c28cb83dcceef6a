import CZMQ

extension ZMQSocket {
    /// Sends `frames` as one message without ever blocking. libzmq queues a multipart message
    /// whole or not at all, so only the first frame can report EAGAIN or EHOSTUNREACH.
    func send(_ frames: [[UInt8]]) -> ZMQSendResult {
        for (index, frame) in frames.enumerated() {
            let flags = ZMQ_DONTWAIT | (index < frames.count - 1 ? ZMQ_SNDMORE : 0)
            let status = frame.withUnsafeBytes { zmq_send(handle, $0.baseAddress, $0.count, flags) }
            if status >= 0 { continue }
            let code = zmq_errno()
            if code == EAGAIN { return .wouldBlock }
            if code == EHOSTUNREACH { return .unreachable }
            return .failed(TransportError(operation: "send on a \(kind) socket", code: code))
        }
        return .sent
    }

    /// Receives one whole message if one is waiting, else returns nil at once. Keeps at most
    /// `maximumFrames` frames; the rest of the message is still read (libzmq delivers a multipart
    /// message whole) but not copied. `admit` sees each frame's bytes in place before they are
    /// copied; frames it refuses are not copied (the message comes back with `truncated` set),
    /// so a server can turn away a huge frame for the price of a look at it.
    func receive(
        maximumFrames: Int = 8, peerAddress: Bool = false,
        admit: ((_ index: Int, _ bytes: UnsafeRawBufferPointer) -> Bool)? = nil
    ) throws(TransportError) -> ZMQReceivedMessage? {
        var message = ZMQReceivedMessage(frames: [], truncated: false, userID: nil)
        var index = 0
        while true {
            zmq_msg_init(frame)
            defer { zmq_msg_close(frame) }
            if zmq_msg_recv(frame, handle, ZMQ_DONTWAIT) < 0 {
                let code = zmq_errno()
                // EAGAIN can only come at the first frame: the rest of a message is already here.
                if code == EAGAIN && message.frames.isEmpty && !message.truncated { return nil }
                if code == EINTR && message.frames.isEmpty { return nil }
                throw TransportError(operation: "receive on a \(kind) socket", code: code)
            }
            if message.frames.count < maximumFrames, !message.truncated {
                let bytes = UnsafeRawBufferPointer(start: zmq_msg_data(frame), count: zmq_msg_size(frame))
                if admit?(index, bytes) ?? true {
                    message.frames.append([UInt8](bytes))
                } else {
                    message.truncated = true
                }
            } else {
                message.truncated = true
            }
            index += 1
            message.frameCount = index
            if zmq_msg_more(frame) == 0 {
                if let userID = zmq_msg_gets(frame, "User-Id") { message.userID = String(cString: userID) }
                message.sourceFD = zmq_msg_get(frame, ZMQ_SRCFD)
                if peerAddress, let address = zmq_msg_gets(frame, "Peer-Address") { message.peerAddress = String(cString: address) }
                return message
            }
        }
    }
}
