import EarshotCore
import EarshotLive
import EarshotTransport
import EarshotWire
import FoundationEssentials

/// What the daemon publishes, on which topic. Every event carries the full state of its key, so
/// a dashboard that missed some can apply the next one as is.
final class DaemonEvents: Sendable {
    let publisher: EventPublisher
    let epoch: UInt64

    init(publisher: EventPublisher, epoch: UInt64) {
        self.publisher = publisher
        self.epoch = epoch
    }

    func publishSession(_ snapshot: Earshot_V1_SessionSnapshot) {
        publisher.publish(topic: Topics.session) { $0.session = snapshot }
    }

    func publishMatch(_ result: Earshot_V1_MatchResult) {
        publisher.publish(topic: Topics.match) { $0.match = result }
    }

    func publishCatalog(_ kind: Earshot_V1_CatalogEvent.Kind, _ summary: Earshot_V1_CatalogSummary?, message: String = "",
                        upload: Earshot_V1_UploadStatus? = nil) {
        publisher.publish(topic: Topics.catalog) { e in
            var event = Earshot_V1_CatalogEvent()
            event.kind = kind
            if let summary { event.catalog = summary }
            if let upload { event.upload = upload }
            event.message = message
            e.catalog = event
        }
    }

    func publishCue(_ event: Earshot_V1_CueEvent) {
        publisher.publish(topic: Topics.cue) { $0.cue = event }
    }

    func publishLibrary(_ notice: Earshot_V1_LibraryNotice) {
        publisher.publish(topic: Topics.library) { $0.library = notice }
    }

    func publishHealth(_ status: Earshot_V1_ServingStatus, message: String = "") {
        publisher.publish(topic: Topics.health) { e in
            var event = Earshot_V1_HealthEvent()
            event.status = status
            event.message = message
            e.health = event
        }
    }
}
