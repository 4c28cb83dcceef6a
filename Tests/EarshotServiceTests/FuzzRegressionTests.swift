import EarshotService
import Testing

/// Inputs that crashed a fuzz harness (fuzz/README.md), kept so the fix stays.
struct FuzzRegressionTests {
    /// fuzz-config: a line of '[' recursed once per bracket and overflowed the stack. Arrays are
    /// now nested at most 16 deep, in the file and in a `--key=value` override alike.
    @Test func deeplyNestedArrayIsAnErrorNotAStackOverflow() {
        let deep = String(repeating: "[", count: 100_000)
        #expect(throws: TOMLSubset.ParseError.self) { try TOMLSubset.parse("rpc.listen = \(deep)") }
        #expect(TOMLSubset.parseValue(deep) == .string(deep))
        #expect(throws: DaemonConfiguration.Problem.self) {
            try DaemonConfiguration.load(text: "[rpc]\nlisten = \(deep)\n", origin: "fuzz.toml")
        }
        // Sixteen levels still parse.
        let nested = String(repeating: "[", count: 16) + "1" + String(repeating: "]", count: 16)
        #expect((try? TOMLSubset.parse("a = \(nested)")) != nil)
    }
}
