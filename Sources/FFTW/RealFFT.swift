import CFFTW

/// A forward real-to-complex FFT of a fixed size, with its plan and aligned buffers made once.
///
/// Planning is not thread-safe in FFTW, so plans are made under a process-wide lock; executing
/// a plan is thread-safe and never allocates. One instance must not be used from two threads
/// at once (it owns its buffers).
///
/// The corresponding C functions are `fftwf_plan_dft_r2c_1d` and `fftwf_execute`.
public final class RealFFT: @unchecked Sendable {
    /// Number of real input samples.
    public let size: Int
    /// Number of complex output bins: `size / 2 + 1`.
    public var binCount: Int { size / 2 + 1 }

    /// Input buffer, `size` floats. Fill it, then call `execute()`.
    public let input: UnsafeMutableBufferPointer<Float>
    /// Output buffer of interleaved (re, im) pairs, `binCount` of them.
    public let output: UnsafeMutableBufferPointer<Float>
    private let plan: fftwf_plan

    public init(size: Int) {
        precondition(size >= 2 && size % 2 == 0, "FFT size must be even and at least 2")
        self.size = size
        let inRaw = fftwf_malloc(MemoryLayout<Float>.stride * size)!
        let outRaw = fftwf_malloc(MemoryLayout<Float>.stride * 2 * (size / 2 + 1))!
        let inBuffer = UnsafeMutableBufferPointer(start: inRaw.bindMemory(to: Float.self, capacity: size), count: size)
        let outBuffer = UnsafeMutableBufferPointer(
            start: outRaw.bindMemory(to: Float.self, capacity: 2 * (size / 2 + 1)), count: 2 * (size / 2 + 1))
        inBuffer.initialize(repeating: 0)
        outBuffer.initialize(repeating: 0)
        input = inBuffer
        output = outBuffer
        plan = PlannerLock.withLock {
            outRaw.withMemoryRebound(to: fftwf_complex.self, capacity: size / 2 + 1) { out in
                // FFTW_ESTIMATE keeps start-up instant and deterministic; MEASURE gains little at these sizes.
                fftwf_plan_dft_r2c_1d(Int32(size), inBuffer.baseAddress, out, UInt32(FFTW_ESTIMATE))
            }
        }!
    }

    deinit {
        PlannerLock.withLock { fftwf_destroy_plan(plan) }
        fftwf_free(input.baseAddress)
        fftwf_free(output.baseAddress)
    }

    /// Transforms `input` into `output`. Allocation-free.
    @inline(__always)
    public func execute() {
        fftwf_execute(plan)
    }
}

/// FFTW's planner is not thread-safe; every plan creation and destruction goes through this lock.
enum PlannerLock {
    private static let mutex = PlannerMutex()
    static func withLock<T>(_ body: () -> T) -> T {
        mutex.lock()
        defer { mutex.unlock() }
        return body()
    }
}
