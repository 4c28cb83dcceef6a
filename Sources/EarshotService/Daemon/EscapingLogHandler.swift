import EarshotCore
import Logging

/// The daemon's log handler: swift-log's stream handler with control characters in messages and
/// metadata escaped (`\u{0}`, `\n`…), so one call is one line and a name a client sent can
/// neither forge a line nor hide in one.
public struct EscapingLogHandler: LogHandler {
    private var inner: StreamLogHandler

    public init(_ inner: StreamLogHandler) { self.inner = inner }

    public var logLevel: Logger.Level {
        get { inner.logLevel }
        set { inner.logLevel = newValue }
    }

    public var metadata: Logger.Metadata {
        get { inner.metadata }
        set { inner.metadata = newValue.mapValues(Self.escaped) }
    }

    /// What a provider gives is merged by the inner handler after `log` has escaped the call's
    /// metadata, so it is escaped where it is made.
    public var metadataProvider: Logger.MetadataProvider? {
        get { inner.metadataProvider }
        set { inner.metadataProvider = newValue.map { provider in Logger.MetadataProvider { provider.get().mapValues(Self.escaped) } } }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { inner[metadataKey: key] }
        set { inner[metadataKey: key] = newValue.map(Self.escaped) }
    }

    public func log(event: LogEvent) {
        var event = event
        event.message = Logger.Message(stringLiteral: event.message.description.escapingControlCharacters)
        event.metadata = event.metadata?.mapValues(Self.escaped)
        inner.log(event: event)
    }

    private static func escaped(_ value: Logger.Metadata.Value) -> Logger.Metadata.Value {
        switch value {
        case .string(let s): .string(s.escapingControlCharacters)
        case .stringConvertible(let c): .string(c.description.escapingControlCharacters)
        case .dictionary(let d): .dictionary(d.mapValues(escaped))
        case .array(let a): .array(a.map(escaped))
        }
    }
}
