SELECT origin, COUNT(*) AS n FROM flights WHERE carrier IN ('9E','EV','MQ','OO','YV') AND dep_time IS NOT NULL  GROUP BY origin
