import CALSA
import EarshotCore

#if canImport(Glibc)
    import Glibc
#endif

/// A PCM that can capture, as ALSA lists it.
public struct CaptureDevice: Equatable, Sendable {
    /// The name to open it with (`hw:CARD=PCH,DEV=0`, `default`, `plughw:…`, or an asoundrc name).
    public var name: String
    /// ALSA's description; often two lines, card and device ("HDA Intel PCH, ALC892 Analog\nFront
    /// Microphone"). Empty when ALSA has none.
    public var description: String

    public init(name: String, description: String) {
        self.name = name
        self.description = description
    }
}

/// The capture devices ALSA knows of, for choosing one (`earshot devices`).
public enum CaptureDevices {
    /// The PCMs of all cards and of the ALSA configuration that can capture, in ALSA's order.
    ///
    /// These are ALSA's "name hints": PCMs marked input-only or without a direction (both ways),
    /// leaving out output-only ones. Entries of the asoundrc appear when they have a `hint`
    /// section (or the configuration shows all). Throws `internalError` with ALSA's reason if
    /// the list cannot be made.
    /// The corresponding C functions are `snd_device_name_hint` and `snd_device_name_get_hint`.
    public static func list() throws(EarshotError) -> [CaptureDevice] {
        AlsaLibrary.prepare()
        var hints: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
        let status = snd_device_name_hint(-1, "pcm", &hints)
        guard status >= 0, let hints else {
            throw .internalError("cannot list ALSA capture devices: \(AlsaLibrary.errorText(status))")
        }
        defer { snd_device_name_free_hint(hints) }

        var devices: [CaptureDevice] = []
        var entry = hints
        while let hint = entry.pointee {
            defer { entry += 1 }
            guard let name = take(hint, "NAME") else { continue }
            let direction = take(hint, "IOID")  // nil: both ways
            guard direction == nil || direction == "Input" else { continue }
            devices.append(CaptureDevice(name: name, description: take(hint, "DESC") ?? ""))
        }
        return devices
    }

    /// One field of a hint; alsa-lib hands over a malloc'd copy, freed here.
    private static func take(_ hint: UnsafeMutableRawPointer, _ field: String) -> String? {
        guard let value = snd_device_name_get_hint(hint, field) else { return nil }
        defer { free(value) }
        return String(cString: value)
    }
}
