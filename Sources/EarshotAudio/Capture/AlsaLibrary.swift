import CALSA

/// Process-wide set-up of alsa-lib and the wording of its errors.
///
/// alsa-lib prints details of failures to stderr from whichever thread called it. The capture
/// thread must not log, and a daemon's stderr is no place for them, so the first use of ALSA
/// routes them into a per-thread buffer (see `Sources/CALSA/shim.h`) and the open/negotiate
/// errors quote them. The shim's buffer is a `static` in a header, which each Swift file would
/// get its own copy of, so every use of it stays in this one file.
enum AlsaLibrary {
    private static let messagesCaptured: Void = earshot_alsa_capture_messages()

    /// Call before any other ALSA function.
    static func prepare() {
        _ = messagesCaptured
    }

    /// The message alsa-lib last reported on this thread, nil if none; clears it.
    static func takeMessage() -> String? {
        let message = earshot_alsa_last_message()!
        // vsnprintf always terminates it, and an unused buffer is all zeros.
        let text = String(cString: message)
        message[0] = 0
        return text.isEmpty ? nil : text.trimmingTrailingNewlines
    }

    /// Forgets any message left on this thread, so the next `takeMessage` reports only what
    /// follows.
    static func clearMessage() {
        _ = takeMessage()
    }

    /// alsa-lib's text for a negative error code, in lower case ("no such file or directory").
    static func errorText(_ code: Int32) -> String {
        let text = String(cString: snd_strerror(code))
        guard let first = text.first else { return "error \(code)" }
        // ALSA's own texts ("Unknown error 524") keep their number; system ones are lowered.
        return first.lowercased() + text.dropFirst()
    }
}

extension String {
    fileprivate var trimmingTrailingNewlines: String {
        var s = Substring(self)
        while s.last == "\n" || s.last == " " { s = s.dropLast() }
        return String(s)
    }
}
