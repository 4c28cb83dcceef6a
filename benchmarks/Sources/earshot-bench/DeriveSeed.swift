/// Mixes integers into a 64-bit seed (SplitMix-style) so every query gets its own stream.
func deriveSeed(_ parts: UInt64...) -> UInt64 {
    var h: UInt64 = 0x243F_6A88_85A3_08D3
    for p in parts {
        h ^= p &+ 0x9E37_79B9_7F4A_7C15 &+ (h << 6) &+ (h >> 2)
        h = (h ^ (h >> 31)) &* 0xBF58_476D_1CE4_E5B9
    }
    return h
}
