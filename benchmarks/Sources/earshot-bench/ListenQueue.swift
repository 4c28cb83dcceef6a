/// The kernel's count of connections dropped because a listening socket's queue was full
/// (`TcpExt ListenOverflows`, all sockets of the machine): a client whose connection was dropped
/// tries again after TCP's first retransmission timeout, a second.
enum ListenQueue {
    static func overflows() -> Int? {
        guard let text = ProcStatus.read("/proc/net/netstat") else { return nil }
        let lines = text.split(separator: "\n")
        for (names, values) in zip(lines, lines.dropFirst()) where names.hasPrefix("TcpExt:") && values.hasPrefix("TcpExt:") {
            let keys = names.split(separator: " "), numbers = values.split(separator: " ")
            guard let index = keys.firstIndex(of: "ListenOverflows"), index < numbers.count else { return nil }
            return Int(numbers[index])
        }
        return nil
    }
}
