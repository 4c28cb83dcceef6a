extension Double {
    /// The value with exactly `places` decimals, as C's `"%.<places>f"` writes it ("0.25",
    /// "-3.000", "12"), and with a leading "+" for values that are not negative when `signed`
    /// (`"%+.2f"`). Rounds the scaled value half to even, so it agrees with printf except where
    /// the scaling itself rounds across a half (the last digit of a 15-digit value).
    ///
    /// The daemon's messages use it instead of Foundation's `String(format:)`, which would link
    /// all of Foundation into the daemon.
    public func decimalText(places: Int, signed: Bool = false) -> String {
        precondition((0...17).contains(places), "decimalText: 0 to 17 places")
        guard isFinite else { return signed && self > 0 ? "+\(self)" : "\(self)" }
        var scale = 1.0
        for _ in 0..<places { scale *= 10 }
        let scaled = (magnitude * scale).rounded(.toNearestOrEven)
        // Beyond what UInt64 holds, there are no decimals left to write.
        guard scaled < 1.8e19 else { return (signed && sign == .plus ? "+" : "") + "\(self)" }
        let units = UInt64(scaled)
        let power = UInt64(scale)
        var text = sign == .minus ? "-" : (signed ? "+" : "")
        text += String(units / power)
        if places > 0 {
            let decimals = String(units % power)
            text += "." + String(repeating: "0", count: places - decimals.count) + decimals
        }
        return text
    }
}
