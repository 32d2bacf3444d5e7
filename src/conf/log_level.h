/* log_level.h -- the values of log.level and log.format (baton.yaml) on
 * their own: the configuration stores them and the supervisor's log
 * (log.h) takes them, and neither needs anything else of the other. */
#ifndef BATON_LOG_LEVEL_H
#define BATON_LOG_LEVEL_H

enum log_level { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR };
/* log.format: auto is text on a terminal, JSON otherwise. */
enum log_format { LOG_FORMAT_AUTO, LOG_FORMAT_JSON, LOG_FORMAT_TEXT };

/* Their names in enum order, NULL-terminated (config.c): the values
 * log.level and log.format take, and a log line's "level". Static. */
extern const char *const log_level_names[];
extern const char *const log_format_names[];

#endif /* BATON_LOG_LEVEL_H */
