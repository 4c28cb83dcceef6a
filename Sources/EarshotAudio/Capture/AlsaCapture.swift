import CALSA
import EarshotCore

#if canImport(Glibc)
    import Glibc
#endif

/// An ALSA PCM opened for capture, with its hardware parameters negotiated.
///
/// `init` opens the device, agrees format, rate, channels, period and buffer with it and
/// prepares it; `parameters` says what was agreed. Everything after that (`start`, `read`,
/// `wait`, `recover`) is for the capture loop: these calls only forward to alsa-lib and return
/// its error codes, so that the loop can run without allocating. Deinit closes the device.
///
/// The device is opened non-blocking: an open of a device that another program holds then fails
/// at once with "busy" instead of hanging, and the loop waits with `snd_pcm_wait` and a timeout,
/// so it can notice a stop request or a device that has gone quiet.
///
/// Not thread-safe: one thread opens, reads and closes it.
/// The corresponding C functions are `snd_pcm_open`, `snd_pcm_hw_params` and `snd_pcm_readi`.
final class AlsaCapture: CaptureInput {
    let parameters: AlsaCaptureParameters
    private let pcm: OpaquePointer

    /// Opens `configuration.device` for capture and negotiates its parameters.
    ///
    /// With `requiredSampleRate`, only that rate is accepted (a device reopened after a failure
    /// must keep the rate its consumer already resamples from).
    ///
    /// Throws `internalError` when the device cannot be opened or set up, and
    /// `invalidAudioFormat` when it offers no usable format, rate or channel count; the message
    /// names the device and says why, with alsa-lib's own words where it gave any.
    init(configuration: AlsaCaptureConfiguration, requiredSampleRate: Int? = nil) throws(EarshotError) {
        try configuration.validate()
        AlsaLibrary.prepare()
        AlsaLibrary.clearMessage()
        let device = configuration.device

        var handle: OpaquePointer?
        let status = snd_pcm_open(&handle, device, SND_PCM_STREAM_CAPTURE, SND_PCM_NONBLOCK)
        guard status >= 0, let handle else {
            throw .internalError("ALSA device \"\(device)\": cannot open for capture: \(Self.openFailureReason(status))")
        }
        do {
            parameters = try Self.negotiate(handle, configuration, requiredSampleRate: requiredSampleRate)
        } catch {
            snd_pcm_close(handle)
            throw error
        }
        pcm = handle
    }

    deinit {
        snd_pcm_close(pcm)
    }

    // MARK: The capture loop's calls; each returns alsa-lib's result unchanged.

    /// Starts the stream. 0 or a negative error code.
    func start() -> Int32 { snd_pcm_start(pcm) }

    /// Reads up to `frames` interleaved frames into `buffer`; the count read (0 when none are
    /// ready) or a negative error code (`-EAGAIN` when none are ready, `-EPIPE` after an overrun).
    func read(into buffer: UnsafeMutableRawPointer, frames: Int) -> Int {
        snd_pcm_readi(pcm, buffer, snd_pcm_uframes_t(frames))
    }

    /// Waits up to `milliseconds` for a period to be ready: 1 ready, 0 timed out, or a negative
    /// error code.
    func wait(milliseconds: Int32) -> Int32 { snd_pcm_wait(pcm, milliseconds) }

    /// Recovers from an overrun (`-EPIPE`), a suspend (`-ESTRPIPE`) or an interrupted call
    /// (`-EINTR`) and restarts the stream; 0, or the error if it cannot be recovered.
    func recover(_ error: Int32) -> Int32 {
        let status = snd_pcm_recover(pcm, error, 1)  // 1: silent, the loop counts it instead
        guard status >= 0 else { return status }
        let started = snd_pcm_start(pcm)
        // After a suspend the stream may already run again; that is success too.
        return started == -EBADFD ? 0 : started
    }

    // MARK: Negotiation

    private static func negotiate(
        _ pcm: OpaquePointer, _ configuration: AlsaCaptureConfiguration, requiredSampleRate: Int?
    ) throws(EarshotError) -> AlsaCaptureParameters {
        let device = configuration.device
        func failure(_ what: String, _ status: Int32) -> EarshotError {
            .internalError("ALSA device \"\(device)\": \(what): \(detail(status))")
        }
        func unsupported(_ what: String) -> EarshotError {
            .invalidAudioFormat("ALSA device \"\(device)\": \(what)")
        }

        var hwPointer: OpaquePointer?
        guard snd_pcm_hw_params_malloc(&hwPointer) >= 0, let hw = hwPointer else {
            throw .internalError("ALSA device \"\(device)\": out of memory for hardware parameters")
        }
        defer { snd_pcm_hw_params_free(hw) }

        var status = snd_pcm_hw_params_any(pcm, hw)
        guard status >= 0 else { throw failure("cannot read its hardware parameters", status) }
        status = snd_pcm_hw_params_set_access(pcm, hw, SND_PCM_ACCESS_RW_INTERLEAVED)
        guard status >= 0 else { throw failure("does not support interleaved reads", status) }

        // Format: the first preferred one the device can do.
        guard let format = configuration.sampleFormats.first(where: {
            snd_pcm_hw_params_test_format(pcm, hw, $0.alsaFormat) == 0
        }) else {
            let wanted = configuration.sampleFormats.map(\.rawValue).joined(separator: ", ")
            throw unsupported(
                "offers none of the sample formats \(wanted) (it offers \(offeredFormats(hw))); "
                    + "a plughw: or plug: PCM converts for it")
        }
        status = snd_pcm_hw_params_set_format(pcm, hw, format.alsaFormat)
        guard status >= 0 else { throw failure("cannot set sample format \(format.rawValue)", status) }

        // Channels: as asked if possible, else the nearest the device has; mixed to mono later.
        var channels = UInt32(configuration.channelCount)
        status = snd_pcm_hw_params_set_channels_near(pcm, hw, &channels)
        guard status >= 0 else { throw failure("cannot set \(configuration.channelCount) channels", status) }
        guard (1...2).contains(channels) else {
            throw unsupported("captures \(channels) channels at the least; capture takes 1 or 2 (a plug: PCM can mix them)")
        }

        // Rate: the nearest the device has, unless an earlier open fixed it.
        var rate = UInt32(requiredSampleRate ?? configuration.sampleRate)
        var direction: Int32 = 0
        if let requiredSampleRate {
            status = snd_pcm_hw_params_set_rate(pcm, hw, rate, 0)
            guard status >= 0 else {
                throw unsupported("cannot capture at \(requiredSampleRate) Hz any more, the rate it was first opened at")
            }
        } else {
            status = snd_pcm_hw_params_set_rate_near(pcm, hw, &rate, &direction)
            guard status >= 0 else { throw failure("cannot set a rate near \(configuration.sampleRate) Hz", status) }
        }
        guard AudioFormat.supportedSampleRates.contains(Double(rate)) else {
            throw unsupported("captures at \(rate) Hz, outside the supported 8000–96000 Hz")
        }

        // Period and buffer, in frames at the agreed rate.
        var period = snd_pcm_uframes_t(max(16, (configuration.periodDuration * Double(rate)).rounded()))
        direction = 0
        status = snd_pcm_hw_params_set_period_size_near(pcm, hw, &period, &direction)
        guard status >= 0 else { throw failure("cannot set a period of \(period) frames", status) }
        var buffer = period * snd_pcm_uframes_t(configuration.periodsPerBuffer)
        status = snd_pcm_hw_params_set_buffer_size_near(pcm, hw, &buffer)
        guard status >= 0 else { throw failure("cannot set a buffer of \(buffer) frames", status) }

        status = snd_pcm_hw_params(pcm, hw)
        guard status >= 0 else { throw failure("cannot apply the hardware parameters", status) }

        // Read back what was installed: the "near" calls may have moved.
        direction = 0
        snd_pcm_hw_params_get_period_size(hw, &period, &direction)
        snd_pcm_hw_params_get_buffer_size(hw, &buffer)
        guard period > 0, buffer >= period else {
            throw unsupported("agreed an unusable period of \(period) frames and buffer of \(buffer) frames")
        }

        // Wake the reader once per period, and start the stream only when the loop says so.
        var swPointer: OpaquePointer?
        guard snd_pcm_sw_params_malloc(&swPointer) >= 0, let sw = swPointer else {
            throw .internalError("ALSA device \"\(device)\": out of memory for software parameters")
        }
        defer { snd_pcm_sw_params_free(sw) }
        status = snd_pcm_sw_params_current(pcm, sw)
        if status >= 0 { status = snd_pcm_sw_params_set_avail_min(pcm, sw, period) }
        if status >= 0 { status = snd_pcm_sw_params_set_start_threshold(pcm, sw, 1) }
        if status >= 0 { status = snd_pcm_sw_params(pcm, sw) }
        guard status >= 0 else { throw failure("cannot apply the software parameters", status) }

        status = snd_pcm_prepare(pcm)
        guard status >= 0 else { throw failure("cannot prepare for capture", status) }

        return AlsaCaptureParameters(
            device: device, sampleFormat: format, sampleRate: Int(rate), channelCount: Int(channels),
            periodFrames: Int(period), bufferFrames: Int(buffer))
    }

    /// The formats a device offers, by ALSA name, for an error message.
    private static func offeredFormats(_ hw: OpaquePointer) -> String {
        var maskPointer: OpaquePointer?
        guard snd_pcm_format_mask_malloc(&maskPointer) >= 0, let mask = maskPointer else { return "unknown" }
        defer { snd_pcm_format_mask_free(mask) }
        snd_pcm_hw_params_get_format_mask(hw, mask)
        var names: [String] = []
        for raw in 0...SND_PCM_FORMAT_LAST.rawValue {
            let format = snd_pcm_format_t(rawValue: raw)
            if snd_pcm_format_mask_test(mask, format) != 0, let name = snd_pcm_format_name(format) {
                names.append(String(cString: name))
            }
        }
        return names.isEmpty ? "none" : names.joined(separator: ", ")
    }

    /// alsa-lib's text for `status`, with its own detail message when it left one.
    private static func detail(_ status: Int32) -> String {
        let text = AlsaLibrary.errorText(status)
        guard let message = AlsaLibrary.takeMessage() else { return text }
        return "\(text) (alsa-lib: \(message))"
    }

    /// Why `snd_pcm_open` failed, in words for people.
    private static func openFailureReason(_ status: Int32) -> String {
        let base: String
        switch -status {
        case ENOENT:
            base = "no such device: no PCM of that name is defined in the ALSA configuration, "
                + "or its sound card is not present"
        case ENODEV, ENXIO:
            base = "no such device: its sound card is not present"
        case EBUSY:
            base = "the device is busy: another program is capturing from it"
        case EACCES, EPERM:
            base = "permission denied: the user needs access to /dev/snd (the audio group)"
        default:
            base = AlsaLibrary.errorText(status)
        }
        guard let message = AlsaLibrary.takeMessage() else { return base }
        return "\(base) (alsa-lib: \(message))"
    }
}
