/// The peak record shared by `.earsig` files and the catalog's peak section.
///
/// Each peak is 6 bytes: u16 time step since the previous peak in 1/8 frame (1 ms), u16 frequency
/// above bin 15 in 1/32 bin (0.5 Hz), i16 log power in 1/256 neper (precise enough to rank peaks
/// by strength). Peaks are stored in time order. A gap longer than a u16 step is written as skip
/// records (step 0xFFFF, frequency 0xFFFF), which no peak can produce (peak values stay ≤ 7744).
enum PeakCoding {
    static let recordSize = 6
    static let timeUnitsPerFrame: Float = 8
    static let binUnits: Float = 32
    static let binBase: Float = 15
    static let maximumBinValue: Float = 7744
    static let magnitudeUnits: Float = 256
    static let skipValue: UInt16 = 0xFFFF

    /// `peak` moved onto the storage grid, so a signature in memory equals its decoded file.
    static func quantized(_ p: Peak) -> Peak {
        let bin = max(0, min(maximumBinValue, ((p.bin - binBase) * binUnits).rounded()))
        let magnitude = max(-32767, min(32767, (p.magnitude * magnitudeUnits).rounded()))
        return Peak(time: (p.time * timeUnitsPerFrame).rounded() / timeUnitsPerFrame, bin: bin / binUnits + binBase,
                    magnitude: magnitude / magnitudeUnits)
    }

    /// Number of records `peaks` encodes to (peaks plus skip records).
    static func recordCount(_ peaks: [Peak]) -> Int {
        var count = 0
        var previous = 0
        for p in peaks {
            let units = max(previous, Int((p.time * timeUnitsPerFrame).rounded()))
            count += 1 + (units - previous) / 0xFFFF
            previous = units
        }
        return count
    }

    static func encode(_ peaks: [Peak], into w: inout ByteWriter) {
        var previous = 0
        for p in peaks {
            let units = max(previous, Int((p.time * timeUnitsPerFrame).rounded()))
            var step = units - previous
            while step >= 0xFFFF {
                w.append(UInt16(0xFFFF))
                w.append(skipValue)
                w.append(Int16(0))
                step -= 0xFFFF
            }
            w.append(UInt16(step))
            w.append(UInt16(max(0, min(maximumBinValue, ((p.bin - binBase) * binUnits).rounded()))))
            w.append(Int16(max(-32767, min(32767, (p.magnitude * magnitudeUnits).rounded()))))
            previous = units
        }
    }

    /// Decodes `count` records. Throws the caller's error for a record no encoder writes.
    static func decode(_ raw: UnsafeRawBufferPointer, records count: Int,
                       fail: @escaping (String) -> EarshotError) throws(EarshotError) -> [Peak] {
        var r = ByteReader(raw, fail: fail)
        var peaks = [Peak]()
        peaks.reserveCapacity(count)
        var units = 0
        for _ in 0..<count {
            let step = try r.read(UInt16.self, "peak time")
            let bin = try r.read(UInt16.self, "peak frequency")
            let magnitude = try r.read(Int16.self, "peak magnitude")
            units += Int(step)
            if bin == skipValue {
                guard step == 0xFFFF, magnitude == 0 else { throw fail("malformed skip record in peak data") }
                continue
            }
            guard Float(bin) <= maximumBinValue else { throw fail("peak frequency out of range") }
            peaks.append(Peak(time: Float(units) / timeUnitsPerFrame, bin: Float(bin) / binUnits + binBase,
                              magnitude: Float(magnitude) / magnitudeUnits))
        }
        return peaks
    }
}
