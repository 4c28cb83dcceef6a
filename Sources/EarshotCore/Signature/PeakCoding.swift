/// The compact peak record shared by `.earsig` files and the catalog's peak section.
///
/// Each peak is 4 bytes: a u16 time step since the previous peak in 1/8 frame (1 ms), then a u16
/// holding the bin above 15 in 1/16 bin (12 bits) and the log power in 2-neper steps (4 bits).
/// Peaks are stored in time order. A gap longer than a u16 step is written as skip records
/// (step 0xFFFF, value 0xFFFF), which no peak can produce: peak values stay below 3872·16.
enum PeakCoding {
    static let recordSize = 4
    static let timeUnitsPerFrame: Float = 8
    static let binUnits: Float = 16
    static let binBase: Float = 15
    static let skipValue: UInt16 = 0xFFFF
    static let magnitudeBase: Float = -16
    static let magnitudeStep: Float = 2

    /// `peak` moved onto the storage grid, so a signature in memory equals its decoded file.
    static func quantized(_ p: Peak) -> Peak {
        let bin = max(0, min(3871, ((p.bin - binBase) * binUnits).rounded()))
        let magnitude = max(0, min(15, ((p.magnitude - magnitudeBase) / magnitudeStep).rounded()))
        return Peak(time: (p.time * timeUnitsPerFrame).rounded() / timeUnitsPerFrame, bin: bin / binUnits + binBase,
                    magnitude: magnitudeBase + magnitude * magnitudeStep)
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
            var units = max(previous, Int((p.time * timeUnitsPerFrame).rounded()))
            var step = units - previous
            while step >= 0xFFFF {
                w.append(UInt16(0xFFFF))
                w.append(skipValue)
                step -= 0xFFFF
            }
            let bin = UInt16(max(0, min(3871, Int(((p.bin - binBase) * binUnits).rounded()))))
            let magnitude = UInt16(max(0, min(15, Int(((p.magnitude - magnitudeBase) / magnitudeStep).rounded()))))
            w.append(UInt16(step))
            w.append(bin << 4 | magnitude)
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
            let value = try r.read(UInt16.self, "peak value")
            units += Int(step)
            if value == skipValue {
                guard step == 0xFFFF else { throw fail("malformed skip record in peak data") }
                continue
            }
            let bin = Float(value >> 4) / binUnits + binBase
            guard bin <= Float(FingerprintParameters.maximumBin) + 0.5 else { throw fail("peak bin out of range") }
            peaks.append(Peak(time: Float(units) / timeUnitsPerFrame, bin: bin,
                              magnitude: magnitudeBase + Float(value & 15) * magnitudeStep))
        }
        return peaks
    }
}
