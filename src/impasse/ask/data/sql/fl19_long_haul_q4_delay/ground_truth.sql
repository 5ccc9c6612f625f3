SELECT carrier, ROUND(AVG(MAX(arr_delay, 0)), 2) AS avg_arr_delay FROM flights WHERE distance > 2400 AND month IN (10,11,12) AND arr_delay IS NOT NULL GROUP BY carrier
