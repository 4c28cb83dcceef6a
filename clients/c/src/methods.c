/* The method table: every rpc of proto/earshot/v1 with its types. protobuf-c's service
 * descriptors carry no streaming flag, so the table is written here; tests/test-unit.c checks
 * it against those descriptors. */
#include <string.h>

#include "internal.h"

#define METHOD(name, path, req, resp, streaming) \
    const earshot_method name = {"/earshot.v1." path, &req##__descriptor, &resp##__descriptor, streaming};

METHOD(earshot_recognizer_prepare, "Recognizer/Prepare", earshot__v1__prepare_request, earshot__v1__prepare_response, false)
METHOD(earshot_recognizer_match, "Recognizer/Match", earshot__v1__match_request, earshot__v1__match_result, false)
METHOD(earshot_recognizer_stream_matches, "Recognizer/StreamMatches", earshot__v1__stream_matches_request,
       earshot__v1__match_result, true)
METHOD(earshot_recognizer_match_signature, "Recognizer/MatchSignature", earshot__v1__match_signature_request,
       earshot__v1__match_result, false)
METHOD(earshot_recognizer_cancel, "Recognizer/Cancel", earshot__v1__cancel_request, earshot__v1__cancel_response, false)
METHOD(earshot_session_get_snapshot, "Session/GetSnapshot", earshot__v1__get_snapshot_request,
       earshot__v1__session_snapshot, false)
METHOD(earshot_catalogs_list, "Catalogs/List", earshot__v1__list_catalogs_request, earshot__v1__list_catalogs_response,
       false)
METHOD(earshot_catalogs_describe, "Catalogs/Describe", earshot__v1__describe_catalog_request,
       earshot__v1__catalog_description, false)
METHOD(earshot_catalogs_enable, "Catalogs/Enable", earshot__v1__catalog_name_request, earshot__v1__catalog_summary, false)
METHOD(earshot_catalogs_disable, "Catalogs/Disable", earshot__v1__catalog_name_request, earshot__v1__catalog_summary,
       false)
METHOD(earshot_catalogs_remove, "Catalogs/Remove", earshot__v1__catalog_name_request,
       earshot__v1__remove_catalog_response, false)
METHOD(earshot_catalogs_begin_upload, "Catalogs/BeginUpload", earshot__v1__begin_upload_request,
       earshot__v1__upload_status, false)
METHOD(earshot_catalogs_upload_chunk, "Catalogs/UploadChunk", earshot__v1__upload_chunk_request,
       earshot__v1__upload_status, false)
METHOD(earshot_catalogs_get_upload, "Catalogs/GetUpload", earshot__v1__upload_request, earshot__v1__upload_status, false)
METHOD(earshot_catalogs_commit_upload, "Catalogs/CommitUpload", earshot__v1__upload_request,
       earshot__v1__commit_upload_response, false)
METHOD(earshot_catalogs_abort_upload, "Catalogs/AbortUpload", earshot__v1__upload_request, earshot__v1__upload_status,
       false)
METHOD(earshot_cues_get_schedule, "Cues/GetSchedule", earshot__v1__cue_schedule_request, earshot__v1__cue_schedule, false)
METHOD(earshot_cues_get_current, "Cues/GetCurrent", earshot__v1__get_current_cues_request, earshot__v1__cue_state, false)
METHOD(earshot_cues_set_cues, "Cues/SetCues", earshot__v1__set_cues_request, earshot__v1__cue_schedule, false)
METHOD(earshot_cues_clear_cues, "Cues/ClearCues", earshot__v1__cue_schedule_request, earshot__v1__cue_schedule, false)
METHOD(earshot_cues_stream_cues, "Cues/StreamCues", earshot__v1__stream_cues_request, earshot__v1__cue_event, true)
METHOD(earshot_library_add, "Library/Add", earshot__v1__add_library_items_request, earshot__v1__library_write_response,
       false)
METHOD(earshot_library_items, "Library/Items", earshot__v1__library_items_request, earshot__v1__library_items_response,
       false)
METHOD(earshot_library_remove, "Library/Remove", earshot__v1__remove_library_items_request,
       earshot__v1__library_write_response, false)
METHOD(earshot_library_watch_library, "Library/WatchLibrary", earshot__v1__watch_library_request,
       earshot__v1__library_change, true)
METHOD(earshot_library_list_owners, "Library/ListOwners", earshot__v1__list_library_owners_request,
       earshot__v1__list_library_owners_response, false)
METHOD(earshot_library_delete_owner, "Library/DeleteOwner", earshot__v1__delete_library_owner_request,
       earshot__v1__library_write_response, false)
METHOD(earshot_library_backup, "Library/Backup", earshot__v1__library_backup_request,
       earshot__v1__library_backup_response, false)
METHOD(earshot_health_check, "Health/Check", earshot__v1__health_check_request, earshot__v1__health_check_response, false)
METHOD(earshot_health_watch, "Health/Watch", earshot__v1__health_check_request, earshot__v1__health_check_response, true)
METHOD(earshot_health_get_stats, "Health/GetStats", earshot__v1__get_stats_request, earshot__v1__stats, false)

const earshot_method *const earshot_methods[] = {
    &earshot_recognizer_prepare, &earshot_recognizer_match, &earshot_recognizer_stream_matches,
    &earshot_recognizer_match_signature, &earshot_recognizer_cancel, &earshot_session_get_snapshot,
    &earshot_catalogs_list, &earshot_catalogs_describe, &earshot_catalogs_enable, &earshot_catalogs_disable,
    &earshot_catalogs_remove, &earshot_catalogs_begin_upload, &earshot_catalogs_upload_chunk,
    &earshot_catalogs_get_upload, &earshot_catalogs_commit_upload, &earshot_catalogs_abort_upload,
    &earshot_cues_get_schedule, &earshot_cues_get_current, &earshot_cues_set_cues, &earshot_cues_clear_cues,
    &earshot_cues_stream_cues, &earshot_library_add, &earshot_library_items, &earshot_library_remove,
    &earshot_library_watch_library, &earshot_library_list_owners, &earshot_library_delete_owner,
    &earshot_library_backup, &earshot_health_check, &earshot_health_watch, &earshot_health_get_stats,
};
const size_t earshot_method_count = sizeof earshot_methods / sizeof earshot_methods[0];

const earshot_method *earshot_method_find(const char *path) {
    if (path == NULL) return NULL;
    for (size_t i = 0; i < earshot_method_count; i++)
        if (strcmp(earshot_methods[i]->path, path) == 0) return earshot_methods[i];
    return NULL;
}
