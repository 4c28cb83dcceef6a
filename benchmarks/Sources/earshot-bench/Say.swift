import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Prints a line immediately (stdout may be a pipe).
func say(_ text: String = "") {
    print(text)
    fflush(nil)
}
