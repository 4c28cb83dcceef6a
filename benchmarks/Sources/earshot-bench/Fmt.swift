import Foundation

enum Fmt {
    static func f(_ v: Double?, _ digits: Int = 1) -> String {
        guard let v, v.isFinite else { return "—" }
        return String(format: "%.\(digits)f", v)
    }

    static func pct(_ num: Int, _ den: Int, _ digits: Int = 1) -> String {
        den == 0 ? "—" : String(format: "%.\(digits)f %%", 100 * Double(num) / Double(den))
    }

    static func bytes(_ n: Int) -> String {
        if n >= 1 << 30 { return String(format: "%.2f GB", Double(n) / Double(1 << 30)) }
        if n >= 1 << 20 { return String(format: "%.1f MB", Double(n) / Double(1 << 20)) }
        if n >= 1 << 10 { return String(format: "%.1f kB", Double(n) / Double(1 << 10)) }
        return "\(n) B"
    }

    static func duration(_ seconds: Double) -> String {
        seconds >= 3600 ? String(format: "%.2f h", seconds / 3600) : String(format: "%.1f min", seconds / 60)
    }

    static func passFail(_ ok: Bool?) -> String {
        switch ok {
        case .some(true): "PASS"
        case .some(false): "**FAIL**"
        case .none: "n/a"
        }
    }
}
